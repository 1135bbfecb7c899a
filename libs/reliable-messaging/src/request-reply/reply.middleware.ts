import { Logger } from '@nestjs/common';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { callNext, type MessageMiddleware } from '../pipeline/message-middleware';
import type { StageDependencies } from '../pipeline/pipeline-stage';

/**
 * A reply consumer's stage (`@Consume({ reply: true })`, `@MessagePattern()`): answers a request once the rest
 * of the pipeline is done with it, so after the handler's work (and the inbox's commit) and before the settle
 * stage acknowledges it. The reply is the handler's return value. A failure that will be dead-lettered (not
 * retryable, attempts exhausted, an invalid request, the redelivery limit) is answered with its error first,
 * so the caller need not wait for its timeout; a failure that will be retried is not answered, and the retry
 * answers. Unanswered: a message without `replyTo` (handled as an event), a duplicate the inbox skipped, and a
 * redelivery the guard sent back to its queue (its copy answers).
 */
export function replyStage(
  plan: Pick<ConsumerPlan, 'reply' | 'retry'>,
  { replies }: Pick<StageDependencies, 'replies'>,
): MessageMiddleware | undefined {
  if (!plan.reply) return undefined;
  const logger = new Logger('ReliableMessaging');
  const answer = async (
    next: (delivery: InboundDelivery) => Promise<void>,
    delivery: InboundDelivery,
    replyTo: string,
  ) => {
    try {
      await callNext(next, delivery);
    } catch (error) {
      if (!delivery.isSettled && plan.retry.decide(error, delivery.attempt).action === 'dead-letter') {
        await replies.reply(delivery, replyTo, { ok: false, error });
      }
      throw error;
    }
    const result = delivery.handlerResult;
    if (result === undefined || delivery.isSettled) {
      logger.debug(
        `${delivery.consumer.name}: request ${String(delivery.raw.properties.messageId)} ended without a handler result (a duplicate, or sent back to its queue); not answered`,
      );
      return;
    }
    await replies.reply(delivery, replyTo, { ok: true, value: result.value });
  };
  return (next) => (delivery) => {
    const replyTo = delivery.raw.properties.replyTo as unknown;
    if (typeof replyTo === 'string' && replyTo !== '') return answer(next, delivery, replyTo);
    logger.debug(
      `${delivery.consumer.name}: message ${String(delivery.raw.properties.messageId)} has no replyTo; handled, not answered`,
    );
    return next(delivery);
  };
}
