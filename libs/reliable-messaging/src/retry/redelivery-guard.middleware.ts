import { Logger } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { HEADERS } from '../reliable-messaging.constants';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { RedeliveryLimitError } from '../errors/redelivery-limit.error';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { DELAY_RESOLUTION_MS } from './delay-levels';
import { publishWhileHeld } from './publish-while-held';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { StageDependencies } from '../pipeline/pipeline-stage';

const MAX_REDELIVERIES_HEADER = 10_000;

/**
 * Bounds deliveries that end with no outcome, above all a handler that kills the process: no failure is ever
 * recorded for it, so the attempt count alone would let it loop forever. The module itself never requeues a
 * delivery of an unordered consumer on purpose (an outage holds it, and a return is a fresh copy), so the
 * broker's redelivered flag means exactly that: the process or its connection died while the message was out.
 * A delivery the broker flags as redelivered is not handled; instead a copy counting one more redelivery (`rm-redeliveries`) goes back to the
 * queue through the delay levels, after the retry backoff for that count, published with a confirm before the
 * original is acknowledged. Past `maxRedeliveries` the message is dead-lettered as `redelivery-limit`.
 *
 * NOTE: the copy waits at least one delay step (100 ms) even when the drawn backoff is 0. Were it handled at
 * once and killed the process again, the original's acknowledgement could die unsent in the socket buffer and
 * the original would come back beside its copy.
 *
 * The count lives in the message's own headers, so it works the same on classic and quorum queues and on every
 * RabbitMQ version, with or without a database: the broker's x-delivery-count changed meaning in RabbitMQ 4.3
 * and classic queues have none. The quorum queue's x-delivery-limit stays only as a backstop.
 *
 * Not for consumers whose intake retries in place (ordered ones): the copy at the tail would let later messages
 * of its key pass it; their retry stage bounds redeliveries in place (ordering/ordered-retry.middleware.ts).
 */
export function redeliveryGuardStage(
  plan: Pick<ConsumerPlan, 'retry' | 'intake'>,
  { retries }: Pick<StageDependencies, 'retries'>,
): MessageMiddleware | undefined {
  if (plan.intake.retriesInPlace) return undefined;
  const policy = plan.retry;
  const { maxRedeliveries } = policy.options;
  const logger = new Logger('ReliableMessaging');
  const checkpoint = async (delivery: InboundDelivery): Promise<void> => {
    const redeliveries = readRedeliveries(delivery.raw) + 1;
    if (redeliveries > maxRedeliveries) throw new RedeliveryLimitError(redeliveries);
    const delayMs = DELAY_RESOLUTION_MS + policy.delayBefore(redeliveries + 1);
    const counted = await publishWhileHeld(
      delivery,
      () => retries.checkpointRedelivery(delivery, redeliveries, delayMs),
      `${delivery.consumer.name}: counting a redelivery of ${delivery.raw.properties.messageId ?? 'a message'}`,
      logger,
    );
    if (counted) delivery.ack();
  };
  // A first delivery, by far the common case, passes straight on without a promise of this stage's own.
  return (next) => (delivery) => (delivery.raw.fields.redelivered ? checkpoint(delivery) : next(delivery));
}

/** The deliveries without an outcome so far, from the `rm-redeliveries` header (0 when absent). */
export function readRedeliveries(message: ConsumeMessage): number {
  const raw = (message.properties.headers ?? {})[HEADERS.redeliveries] as unknown;
  if (raw === undefined || raw === null) return 0;
  const value = typeof raw === 'number' ? raw : Number(Buffer.isBuffer(raw) ? raw.toString('utf8') : raw);
  if (!Number.isInteger(value) || value < 0 || value > MAX_REDELIVERIES_HEADER) {
    throw new InvalidMessageError(
      'invalid-header',
      `'${HEADERS.redeliveries}' must be an integer from 0 to ${MAX_REDELIVERIES_HEADER}`,
    );
  }
  return value;
}
