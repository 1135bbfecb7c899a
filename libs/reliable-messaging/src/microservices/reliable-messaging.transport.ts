import { Injectable } from '@nestjs/common';
import type { CustomTransportStrategy, MessageHandler } from '@nestjs/microservices';
import { Server } from '@nestjs/microservices/server/server.js';
import { ConfigurationError } from '../errors/configuration.error';
import { EventPatternBridge, RELIABLE_MESSAGING_TRANSPORT } from './event-pattern-bridge';

export { RELIABLE_MESSAGING_TRANSPORT };

/**
 * Serves an app's `@EventPattern()` and `@MessagePattern()` handlers through the module's reliability pipeline, for a service coming
 * from Nest's RMQ transport: each handler gets its own durable queue bound to its pattern, and each message is
 * acknowledged only after its handler's work, retried with backoff, dead-lettered with its reason, deduplicated
 * by the inbox and traced, exactly as a `@Consume()` handler is. A `@MessagePattern()` handler is a reply
 * consumer (`@Consume({ reply: true })`): its return value answers the request. Import
 * `ReliableMessagingMicroservicesModule`, and connect the transport before the app starts:
 *
 * @example
 * const app = await NestFactory.create(AppModule);
 * app.connectMicroservice({ strategy: app.get(ReliableMessagingTransport) });
 * await app.startAllMicroservices();
 * await app.listen(3000);
 *
 * The module itself starts, drains and stops these consumers with the rest (its lifecycle): `listen()` and
 * `close()` here only tell Nest that the transport is ready and done. Handlers see the `rpc` context type, as
 * under Nest's transports; `@Payload()` is the message's payload and `@Ctx()` its MessageContext.
 */
@Injectable()
export class ReliableMessagingTransport extends Server implements CustomTransportStrategy {
  override readonly transportId = RELIABLE_MESSAGING_TRANSPORT;

  constructor(private readonly bridge: EventPatternBridge) {
    super();
  }

  /** Nest hands over each pattern when the app connects the transport; one that comes too late is refused. */
  override addHandler(
    pattern: unknown,
    callback: MessageHandler,
    isEventHandler?: boolean,
    extras?: Record<string, unknown>,
  ): void {
    if (this.bridge.planned) {
      const decorator = isEventHandler ? '@EventPattern' : '@MessagePattern';
      throw new ConfigurationError(
        `ReliableMessagingTransport was connected after the app started, so ${decorator}(${JSON.stringify(pattern)}) would have no queue: ` +
          'call app.connectMicroservice({ strategy: app.get(ReliableMessagingTransport) }) before app.init() or app.listen()',
      );
    }
    super.addHandler(pattern, callback, isEventHandler, extras);
    this.bridge.connected = true;
  }

  listen(callback: (...optionalParams: unknown[]) => unknown): void {
    callback();
  }

  close(): void {
    // The module's lifecycle drains and closes the consumers on the app's shutdown.
  }

  on(): void {
    // The transport has no events of its own: the module's health checks and metrics report the connections.
  }

  unwrap<T>(): T {
    throw new Error(
      'ReliableMessagingTransport has no client of its own: the module runs its consumers on its consumer connection',
    );
  }
}
