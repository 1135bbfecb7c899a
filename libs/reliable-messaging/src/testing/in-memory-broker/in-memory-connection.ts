import { EventEmitter } from 'node:events';
import { AmqpError, type InMemoryBroker } from './in-memory-broker';
import { IllegalOperationError, InMemoryChannel } from './in-memory-channel';

/**
 * The RabbitMQ version the in-memory broker reports, which decides the version-gated paths the module takes: the
 * version whose behaviour it copies, the one the transport contract suite holds it to.
 */
export const IN_MEMORY_BROKER_VERSION = '3.10.8';

/**
 * A connection to the in-memory broker with the part of amqplib's `ChannelModel` the module uses. `drop()`
 * ends it as a broker restart or a network failure would: every channel closes, their unacknowledged messages
 * go back to their queues, and the connection emits `error` and `close`.
 */
export class InMemoryConnection extends EventEmitter {
  readonly connection = { serverProperties: { version: IN_MEMORY_BROKER_VERSION } };
  private readonly channels = new Set<InMemoryChannel>();
  private closed = false;

  constructor(private readonly broker: InMemoryBroker) {
    super();
  }

  createChannel(): Promise<InMemoryChannel> {
    return this.open(false);
  }

  createConfirmChannel(): Promise<InMemoryChannel> {
    return this.open(true);
  }

  async close(): Promise<void> {
    this.end();
    await Promise.resolve();
  }

  /** Ends the connection from the broker's side, with `error` before `close`. */
  drop(reason = 'CONNECTION_FORCED - closed by the test'): void {
    this.end(new AmqpError(320, reason));
  }

  private end(error?: AmqpError): void {
    if (this.closed) return;
    this.closed = true;
    for (const channel of [...this.channels]) channel.shutDown();
    setImmediate(() => {
      if (error) this.emit('error', error);
      this.emit('close', error);
    });
  }

  private open(confirms: boolean): Promise<InMemoryChannel> {
    if (this.closed) return Promise.reject(new IllegalOperationError('Connection closed'));
    const channel = new InMemoryChannel(this.broker, this.connection, confirms, (closed) =>
      this.channels.delete(closed),
    );
    this.channels.add(channel);
    return Promise.resolve(channel);
  }
}
