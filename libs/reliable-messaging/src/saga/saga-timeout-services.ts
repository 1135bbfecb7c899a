import type { EntityManager } from 'typeorm';
import type { PublishOptions } from '../publishing/publish-options';

/**
 * What saga timeouts use of the module, by shape: the publisher that schedules a timeout (MessagePublisher) and
 * the cancel of a waiting one (ScheduledMessages). Provided as SAGA_TIMEOUT_SERVICES.
 */
export interface SagaTimeoutServices {
  publisher: { publish(message: object, options: PublishOptions): Promise<{ messageId: string }> };
  scheduled: { cancel(target: { messageId: string }, options: { manager?: EntityManager }): Promise<number> };
}
