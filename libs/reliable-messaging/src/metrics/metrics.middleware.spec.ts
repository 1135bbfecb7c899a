import { describe, expect, it } from '@jest/globals';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import type { StageDependencies } from '../pipeline/pipeline-stage';
import { metricsStage } from './metrics.middleware';

/** Runs one delivery through the stage and resolves with the consumer lag it observed, in seconds. */
async function lagOf(occurredAt: Date, headers: Record<string, unknown>): Promise<number[]> {
  const lags: number[] = [];
  const metrics = {
    labelsOf: () => ({ queue: 'reminders', type: 'shop.reminder' }),
    handlerDuration: { observe: () => undefined },
    consumed: { inc: () => undefined },
    failed: { inc: () => undefined },
    consumerLag: { observe: (_labels: unknown, seconds: number) => lags.push(seconds) },
  } as unknown as StageDependencies['metrics'];
  const delivery = {
    raw: { properties: { type: 'shop.reminder', headers } },
    envelope: { occurredAt },
    consumer: { queue: 'reminders' },
  } as unknown as InboundDelivery;
  await metricsStage(undefined, { metrics })(async () => undefined)(delivery);
  return lags;
}

describe('metricsStage', () => {
  const hourAgo = new Date(Date.now() - 3_600_000);

  it('counts consumer lag from occurredAt', async () => {
    const [lag] = await lagOf(hourAgo, {});
    expect(lag).toBeGreaterThanOrEqual(3600);
  });

  it('counts a scheduled message’s lag from when it was due, not from when it was published', async () => {
    const [lag] = await lagOf(hourAgo, { 'rm-scheduled-for': new Date(Date.now() - 2000).toISOString() });
    expect(lag).toBeGreaterThanOrEqual(2);
    expect(lag).toBeLessThan(60);
  });

  it.each([
    ['not a time', 'soon'],
    ['not a string', 12],
    ['too long to be a time', `${new Date().toISOString()}${' '.repeat(40)}`],
  ])('ignores an rm-scheduled-for header that is %s', async (_, value) => {
    const [lag] = await lagOf(hourAgo, { 'rm-scheduled-for': value });
    expect(lag).toBeGreaterThanOrEqual(3600);
  });
});
