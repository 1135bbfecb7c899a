import { ConfigurationError } from './configuration.error';

/**
 * A queue or exchange already exists on the broker with arguments other than the ones this app declares.
 * RabbitMQ refuses to change them in place; the message says which argument differs and what to do.
 */
export class TopologyMismatchError extends ConfigurationError {
  override readonly name = 'TopologyMismatchError';
  constructor(
    readonly kind: 'queue' | 'exchange',
    readonly entity: string,
    readonly argument: string,
    readonly declared: string,
    readonly existing: string,
  ) {
    super(
      `${kind} '${entity}' already exists with ${argument}=${existing}, but this app declares ${argument}=${declared}. ` +
        `RabbitMQ cannot change ${argument} in place: either change the consumer's options back to match, ` +
        `or drain the ${kind}, delete it (rabbitmqctl delete_${kind} ${entity}) and restart so it is declared anew.`,
    );
  }
}
