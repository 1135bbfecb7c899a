import type { ConsumerDefinition } from '../consuming/consumer-definition';
import { ConfigurationError } from '../errors/configuration.error';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import { deadlineMiddleware } from './deadline.middleware';
import { assertDeadline, maxDeadlineMs } from './deadline-limits';
import type { OverdueHandlers } from './overdue-handlers.service';
import { rateLimitMiddleware } from './rate-limit.middleware';

/**
 * A consumer's flow-control stages, its options checked first (a bad one fails startup): the rate limit when
 * it has one, then the handler deadline, which every consumer has.
 */
export function flowControlStages(
  consumer: ConsumerDefinition,
  options: Pick<ResolvedMessagingOptions, 'defaultDeadlineMs' | 'consumerTimeoutMs'>,
  overdue: OverdueHandlers,
): MessageMiddleware[] {
  const stages: MessageMiddleware[] = [];
  const { rateLimit } = consumer.options;
  if (rateLimit !== undefined) {
    if (
      typeof rateLimit !== 'object' ||
      rateLimit === null ||
      !isInteger(rateLimit.limit, 1, 1_000_000) ||
      !isInteger(rateLimit.periodMs, 1, 86_400_000)
    ) {
      throw new ConfigurationError(
        `@Consume on ${consumer.name}: 'rateLimit' must be { limit: 1..1000000, periodMs: 1..86400000 }, e.g. { limit: 10, periodMs: 1000 }`,
      );
    }
    stages.push(rateLimitMiddleware(rateLimit));
  }
  const deadlineMs = consumer.options.deadlineMs ?? options.defaultDeadlineMs;
  assertDeadline(`${consumer.name} deadlineMs`, deadlineMs, options.consumerTimeoutMs);
  stages.push(
    deadlineMiddleware(consumer, { deadlineMs, limitMs: maxDeadlineMs(options.consumerTimeoutMs) }, overdue),
  );
  return stages;
}

function isInteger(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}
