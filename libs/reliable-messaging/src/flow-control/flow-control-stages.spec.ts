import { describe, expect, it } from '@jest/globals';
import type { ConsumerDefinition } from '../consuming/consumer-definition';
import type { ConsumeOptions } from '../decorators/consume.decorator';
import { ConfigurationError } from '../errors/configuration.error';
import { flowControlStages } from './flow-control-stages';
import { OverdueHandlers } from './overdue-handlers.service';

const MODULE = { defaultDeadlineMs: 300_000, consumerTimeoutMs: 1_800_000 };
const consumer = (options: Partial<ConsumeOptions>) =>
  ({
    name: 'Billing.onOrderPlaced',
    queue: 'billing',
    options: { queue: 'billing', ...options },
  }) as ConsumerDefinition;

describe('flowControlStages', () => {
  it.each([
    ['no rate limit: the deadline only', {}, 1],
    ['a rate limit and the deadline', { rateLimit: { limit: 10, periodMs: 1000 } }, 2],
    ['a deadline up to the consumer timeout less its margin', { deadlineMs: 1_790_000 }, 1],
  ])('builds %s', (_case, options, stages) => {
    expect(flowControlStages(consumer(options), MODULE, new OverdueHandlers())).toHaveLength(stages);
  });

  it.each([
    [
      'a deadline past the consumer timeout less its margin',
      { deadlineMs: 1_790_001 },
      /deadlineMs' must be an integer from 1 to 1790000/,
    ],
    ['a zero deadline', { deadlineMs: 0 }, /deadlineMs' must be an integer/],
    ['a fractional deadline', { deadlineMs: 1.5 }, /deadlineMs' must be an integer/],
    [
      'a rate limit without a period',
      { rateLimit: { limit: 10 } },
      /'rateLimit' must be \{ limit: 1\.\.1000000, periodMs/,
    ],
    ['a rate limit of zero', { rateLimit: { limit: 0, periodMs: 1000 } }, /'rateLimit' must be/],
    ['a rate limit that is a number', { rateLimit: 10 }, /'rateLimit' must be/],
  ])('refuses %s at startup with a message that says what to set', (_case, options, message) => {
    const build = () =>
      flowControlStages(consumer(options as Partial<ConsumeOptions>), MODULE, new OverdueHandlers());
    expect(build).toThrow(ConfigurationError);
    expect(build).toThrow(message);
  });
});
