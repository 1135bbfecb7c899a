import { Injectable, Logger } from '@nestjs/common';
import type { ReadPacket, WritePacket } from '@nestjs/microservices';
import { ClientProxy } from '@nestjs/microservices/client/client-proxy.js';
import { InvalidMessageException } from '@nestjs/microservices/errors/invalid-message.exception.js';
import { from, type Observable } from 'rxjs';
import { getMessageDefinition } from '../decorators/message-type.decorator';
import { MessagePublisher, type PublishReceipt } from '../publishing/message-publisher.service';
import type { RawMessage } from '../publishing/publish-options';
import { uuidv7 } from '../envelope/uuid-v7';
import { errorMessage } from '../util/error-text';
import { requestTimeout } from '../request-reply/request-options';

/**
 * How long `send()` waits for a reply unless the client was made with `withSendTimeout(ms)`. Long enough for a
 * slow answer, short enough that a request nobody serves does not wait for ever; the request expires in the
 * broker after the same time. A shorter rxjs `timeout()` on the observable also works: unsubscribing stops the wait.
 */
export const DEFAULT_SEND_TIMEOUT_MS = 30_000;

/**
 * A Nest `ClientProxy` whose `send(pattern, data)` is `MessagePublisher.request()` (the reply of the
 * `@MessagePattern(pattern)` or `@Consume({ reply: true })` handler, within the client's send timeout, default
 * {@link DEFAULT_SEND_TIMEOUT_MS}), and whose `emit(pattern, data)` publishes through MessagePublisher: into the outbox, in the
 * caller's transaction, when the module has a `dataSource`, else at once with a broker confirm. For a service
 * coming from Nest's RMQ transport, provide it under the client's old token and keep the calls:
 *
 * @example
 * providers: [{ provide: 'ORDERS', useExisting: ReliableMessagingClient }]
 * // in a @Transactional() method: the event commits with the state change
 * await lastValueFrom(this.orders.emit('order.paid', { orderId }));
 *
 * `data` is a `@MessageType()` instance (its class gives the type, version and keys, and `pattern` routes it),
 * or a plain object: then `pattern` is its type, its version is `1.0` and its idempotency key is a new id, so
 * consumers deduplicate redeliveries of it but not a second emit of the same fact (give it a class with an
 * `idempotencyKey` for that).
 *
 * NOTE: the publish starts in `emit()` itself, in the caller's async context, and the observable returned
 * settles with it. Await it (`lastValueFrom`) inside the transaction: a transaction that commits first leaves
 * the outbox row out, and the publish then fails with NoTransactionError. A failed emit is also logged, since a
 * caller that does not subscribe would never see it.
 */
@Injectable()
export class ReliableMessagingClient extends ClientProxy {
  private readonly logger = new Logger('ReliableMessaging');

  /** How long `send()` waits for a reply; set with `withSendTimeout()`. */
  readonly sendTimeoutMs: number = DEFAULT_SEND_TIMEOUT_MS;

  constructor(private readonly publisher: MessagePublisher) {
    super();
  }

  /**
   * A client like this one whose `send()` waits `timeoutMs` for a reply, for a provider of its own:
   * `{ provide: 'BILLING', useFactory: (c: ReliableMessagingClient) => c.withSendTimeout(5000), inject: [ReliableMessagingClient] }`.
   */
  withSendTimeout(timeoutMs: number): ReliableMessagingClient {
    const client = new ReliableMessagingClient(this.publisher);
    (client as { sendTimeoutMs: number }).sendTimeoutMs = requestTimeout('send()', { timeoutMs });
    return client;
  }

  override emit<TResult = PublishReceipt, TInput = unknown>(
    pattern: unknown,
    data: TInput,
  ): Observable<TResult> {
    const published = this.dispatchEvent<TResult>(this.createPacket(pattern, data));
    published.catch((error: unknown) =>
      this.logger.error(`emit('${String(pattern)}') was not published: ${errorMessage(error)}`),
    );
    return from(published);
  }

  connect(): Promise<void> {
    return Promise.resolve();
  }

  close(): void {
    // The module's lifecycle closes the publisher connection on the app's shutdown.
  }

  override on(): void {
    // No events of its own: the module's health checks and metrics report the connections.
  }

  unwrap<T>(): T {
    return this.publisher as T;
  }

  protected override async dispatchEvent<T = PublishReceipt>(packet: ReadPacket): Promise<T> {
    const pattern = packet.pattern as unknown;
    const data: unknown = packet.data;
    if (typeof pattern !== 'string' || pattern === '') {
      throw new InvalidMessageException();
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      throw new TypeError(
        `emit('${pattern}') needs an object to publish, got ${data === null ? 'null' : typeof data}`,
      );
    }
    const receipt =
      typeof data === 'object' && data !== null && getMessageDefinition(data.constructor)
        ? await this.publisher.publish(data, { routingKey: pattern })
        : await this.publisher.publish(rawMessage(pattern, data));
    return receipt as T;
  }

  /**
   * `send()`'s request: `MessagePublisher.request()` with the client's send timeout, routed by the pattern as
   * `emit()` is; its reply (or error: RequestTimeoutError, RemoteHandlerError, RequestInterruptedError) ends the
   * observable. Unsubscribing (an rxjs `timeout()`, say) stops the wait.
   */
  protected override publish(packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    const pattern = packet.pattern as unknown;
    const data: unknown = packet.data;
    if (typeof pattern !== 'string' || pattern === '') {
      callback({ err: new InvalidMessageException(), isDisposed: true });
      return () => undefined;
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      callback({
        err: new TypeError(
          `send('${pattern}') needs an object to send, got ${data === null ? 'null' : typeof data}`,
        ),
        isDisposed: true,
      });
      return () => undefined;
    }
    const abort = new AbortController();
    const options = { timeoutMs: this.sendTimeoutMs, signal: abort.signal };
    const reply = getMessageDefinition(data.constructor)
      ? this.publisher.request(data, { ...options, routingKey: pattern })
      : this.publisher.request(rawMessage(pattern, data), options);
    reply.then(
      (response: unknown) => callback({ response, isDisposed: true }),
      (error: unknown) => {
        if (!abort.signal.aborted) callback({ err: error, isDisposed: true });
      },
    );
    return () => abort.abort(new Error(`send('${pattern}') was unsubscribed before its reply`));
  }
}

/** A plain object emitted under `pattern`: its type is the pattern, its idempotency key a new id. */
function rawMessage(pattern: string, data: unknown): RawMessage {
  return { type: pattern, payload: data as Record<string, unknown>, idempotencyKey: uuidv7() };
}
