import { ConfigurationError } from './configuration.error';

/**
 * A consumer orders by key, which needs RabbitMQ's consistent-hash exchange type, and the broker does not have
 * it: the `rabbitmq_consistent_hash_exchange` plugin (shipped with RabbitMQ) is not enabled. Thrown at startup.
 */
export class ConsistentHashExchangeMissingError extends ConfigurationError {
  override readonly name = 'ConsistentHashExchangeMissingError';
  constructor(
    readonly consumer: string,
    readonly brokerMessage: string,
  ) {
    super(
      `${consumer} orders messages by key, which needs RabbitMQ's consistent-hash exchange, and the broker refused it (${brokerMessage}). ` +
        'Enable the plugin on every node with `rabbitmq-plugins enable rabbitmq_consistent_hash_exchange` ' +
        '(or list it in enabled_plugins) and start the app again; see docs/ordering.md.',
    );
  }
}
