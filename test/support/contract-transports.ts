import { randomBytes } from 'node:crypto';
import * as amqp from 'amqplib';
import type { ChannelModel } from 'amqplib';
import type { ReliableMessagingModuleOptions } from 'nestjs-reliable-messaging';
import { InMemoryBroker, InMemoryConnection } from 'nestjs-reliable-messaging/testing';
import { DEFAULT_AMQP_URL } from './test-broker';

/**
 * What the transport contract runs on: something that speaks amqplib's `ChannelModel`, and a clock. The cases
 * never sleep: they call `advance(ms)` where time must pass (a TTL, a retry delay) and then wait for the outcome.
 */
export interface Transport {
  /** Shown in the test names: `in-memory` or `rabbitmq`. */
  readonly name: string;
  /** How often the cases poll a condition on this transport. */
  readonly pollIntervalMs: number;
  /** A new connection, amqplib-shaped; closed by `close()`. */
  connect(): Promise<ChannelModel>;
  /**
   * Lets `ms` of broker time pass. The in-memory broker moves its virtual clock (expiring what is due); on
   * RabbitMQ real time passes by itself, so it returns at once and the caller waits for the outcome.
   */
  advance(ms: number): Promise<void>;
  /** The module options that run ReliableMessagingModule on this transport (`urls`, `brokerConnector`). */
  moduleOptions(): Pick<ReliableMessagingModuleOptions, 'urls' | 'brokerConnector'>;
  /** Closes every connection `connect()` opened. */
  close(): Promise<void>;
}

/** The in-memory RabbitMQ, one broker per transport, on a virtual clock. */
export function inMemoryTransport(): Transport {
  const broker = new InMemoryBroker();
  const connections: InMemoryConnection[] = [];
  const connect = (): Promise<ChannelModel> => {
    const connection = new InMemoryConnection(broker);
    connections.push(connection);
    return Promise.resolve(connection as unknown as ChannelModel);
  };
  return {
    name: 'in-memory',
    pollIntervalMs: 2,
    connect,
    async advance(ms) {
      broker.advance(ms);
      // Deliveries and confirms the expiry caused are handed over on later turns of the event loop.
      await new Promise((resolve) => setImmediate(resolve));
    },
    moduleOptions: () => ({ urls: 'amqp://in-memory', brokerConnector: connect }),
    async close() {
      for (const connection of connections.splice(0)) await connection.close();
    },
  };
}

/** The real RabbitMQ of the end-to-end specs (`AMQP_URL`, else the local one). */
export function rabbitMqTransport(url: string = process.env.AMQP_URL ?? DEFAULT_AMQP_URL): Transport {
  const connections: ChannelModel[] = [];
  const tag = `rm-contract-${randomBytes(3).toString('hex')}`;
  return {
    name: 'rabbitmq',
    pollIntervalMs: 20,
    async connect() {
      const connection = await amqp.connect(url, { clientProperties: { connection_name: tag } });
      // NOTE: amqplib emits 'error' on the connection for a forced close; unhandled it would end the Jest run.
      connection.on('error', () => undefined);
      connections.push(connection);
      return connection;
    },
    advance: () => Promise.resolve(),
    moduleOptions: () => ({ urls: url }),
    async close() {
      for (const connection of connections.splice(0)) await connection.close().catch(() => undefined);
    },
  };
}
