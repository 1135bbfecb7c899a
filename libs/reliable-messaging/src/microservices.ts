/**
 * The bridge from `@nestjs/microservices`, imported as `nestjs-reliable-messaging/microservices`: serve existing
 * `@EventPattern()` handlers through the module's reliability pipeline, and emit events through its publisher
 * (the outbox with a `dataSource`). See docs/handlers.md, "Coming from Nest's RMQ transport".
 */

/** Provides the transport and the client: import it beside `ReliableMessagingModule.forRoot()`. */
export { ReliableMessagingMicroservicesModule } from './microservices/reliable-messaging-microservices.module';
/** The transport strategy: `app.connectMicroservice({ strategy: app.get(ReliableMessagingTransport) })`. */
export {
  ReliableMessagingTransport,
  RELIABLE_MESSAGING_TRANSPORT,
} from './microservices/reliable-messaging.transport';
/**
 * The client: `{ provide: 'ORDERS', useExisting: ReliableMessagingClient }`, then `emit()` and `send()` as before;
 * `send()` waits up to `DEFAULT_SEND_TIMEOUT_MS` for its reply unless the client comes from `withSendTimeout(ms)`.
 */
export { ReliableMessagingClient, DEFAULT_SEND_TIMEOUT_MS } from './microservices/reliable-messaging.client';
