import type { ChannelModel } from 'amqplib';
import type { BrokerConnector } from '../options/reliable-messaging.options';
import type { InMemoryBroker } from './in-memory-broker/in-memory-broker';
import { InMemoryConnection } from './in-memory-broker/in-memory-connection';

/** Injection token of the testing module's InMemoryConnections. */
export const IN_MEMORY_CONNECTIONS = Symbol('IN_MEMORY_CONNECTIONS');

/** The module's connections to the in-memory broker: the connector that opens them, and the ones still open. */
export class InMemoryConnections {
  private readonly opened = new Set<InMemoryConnection>();

  constructor(readonly broker: InMemoryBroker) {}

  /** The module's `brokerConnector`: a new connection to the in-memory broker each time. */
  readonly connect: BrokerConnector = () => {
    const connection = new InMemoryConnection(this.broker);
    this.opened.add(connection);
    connection.once('close', () => this.opened.delete(connection));
    return Promise.resolve(connection as unknown as ChannelModel);
  };

  open(): InMemoryConnection[] {
    return [...this.opened];
  }
}
