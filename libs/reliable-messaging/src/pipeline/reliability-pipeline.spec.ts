import { describe, expect, it } from '@jest/globals';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { RetryPolicy } from '../retry/retry-policy';
import { resolveRetryOptions } from '../options/retry.options';
import type { StageDependencies } from './pipeline-stage';
import { RELIABILITY_STAGES } from './reliability-pipeline';
import { orderedIntake } from '../intake/ordered-intake';
import { unorderedIntake } from '../intake/unordered-intake';

const PLAN = {
  name: 'Billing.onOrderPlaced',
  queue: 'billing',
  messageTypes: ['order.placed'],
  acceptedMajorVersions: [1],
  maxPayloadBytes: 262_144,
  accept: ['envelope'],
  deadline: { deadlineMs: 30_000, limitMs: 1_790_000 },
  retry: new RetryPolicy(resolveRetryOptions(undefined)),
  ordering: { mode: 'none' },
  intake: unorderedIntake,
} as unknown as ConsumerPlan;

const WITHOUT_DATABASE = { inbox: {} } as unknown as StageDependencies;
const WITH_DATABASE = { database: {}, inbox: {} } as unknown as StageDependencies;

/** The names of the stages a consumer's chain is built from, outermost first. */
function chain(plan: Partial<ConsumerPlan>, deps: StageDependencies): string[] {
  return RELIABILITY_STAGES.filter((stage) => stage({ ...PLAN, ...plan }, deps) !== undefined).map(
    (stage) => stage.name,
  );
}

describe('RELIABILITY_STAGES', () => {
  it.each<[string, Partial<ConsumerPlan>, StageDependencies, string[]]>([
    [
      'an unordered consumer without a database',
      {},
      WITHOUT_DATABASE,
      [
        'settleStage',
        'redeliveryGuardStage',
        'traceStage',
        'metricsStage',
        'claimCheckStage',
        'decodeStage',
        'deadlineStage',
      ],
    ],
    [
      'a rate-limited, deduplicating consumer with a database',
      { rateLimit: { limit: 1, periodMs: 1000 }, dedup: { scope: 'billing' } },
      WITH_DATABASE,
      [
        'settleStage',
        'redeliveryGuardStage',
        'traceStage',
        'metricsStage',
        'claimCheckStage',
        'decodeStage',
        'databasePauseStage',
        'rateLimitStage',
        'deadlineStage',
        'inboxStage',
      ],
    ],
    [
      'an ordered consumer, which retries in place instead of through the redelivery guard',
      { ordering: { mode: 'queue' }, intake: orderedIntake },
      WITHOUT_DATABASE,
      [
        'settleStage',
        'traceStage',
        'metricsStage',
        'claimCheckStage',
        'decodeStage',
        'orderedRetryStage',
        'deadlineStage',
      ],
    ],
    [
      'a reply consumer, which answers inside the settle stage',
      { reply: true },
      WITHOUT_DATABASE,
      [
        'settleStage',
        'replyStage',
        'redeliveryGuardStage',
        'traceStage',
        'metricsStage',
        'claimCheckStage',
        'decodeStage',
        'deadlineStage',
      ],
    ],
  ])('builds the chain of %s', (_case, plan, deps, stages) => {
    expect(chain(plan, deps)).toEqual(stages);
  });
});
