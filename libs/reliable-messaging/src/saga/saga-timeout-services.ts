import type { EntityManager } from 'typeorm';
import type { PublishOptions } from '../publishing/publish-options';

/**
 * What saga timeouts use of the module, by shape: the publisher that schedules a timeout (MessagePublisher), the
 * cancel of a waiting one (ScheduledMessages), and the clock a delay counts from (the app's, or under the testing
 * module without a database, the harness's). Provided as SAGA_TIMEOUT_SERVICES.
 */
export interface SagaTimeoutServices {
  publisher: { publish(message: object, options: PublishOptions): Promise<{ messageId: string }> };
  scheduled: { cancel(target: { messageId: string }, options: { manager?: EntityManager }): Promise<number> };
  /** Now, in epoch ms, on the clock scheduled messages wait for. */
  now(): number;
}
