import { describe, expect, it } from '@jest/globals';
import { InboxStats, type DuplicateDelivery } from './inbox-stats.service';

const duplicate = (queue: string, key: string): DuplicateDelivery => ({
  queue,
  consumer: 'PaymentHandler.onOrderPlaced',
  messageId: `m-${key}`,
  idempotencyKey: key,
  type: 'order.placed',
});

describe('InboxStats', () => {
  it('counts duplicates per queue and in all', () => {
    const stats = new InboxStats();
    stats.record(duplicate('payments', 'a'));
    stats.record(duplicate('payments', 'b'));
    stats.record(duplicate('shipping', 'a'));

    expect([
      stats.duplicates,
      stats.duplicatesOf('payments'),
      stats.duplicatesOf('shipping'),
      stats.duplicatesOf('x'),
    ]).toEqual([3, 2, 1, 0]);
  });

  it('tells listeners about each duplicate until they stop, and survives a listener that throws', () => {
    const stats = new InboxStats();
    const seen: string[] = [];
    stats.onDuplicate(() => {
      throw new Error('the metrics registry is gone');
    });
    const stop = stats.onDuplicate((d) => seen.push(d.idempotencyKey));

    stats.record(duplicate('payments', 'a'));
    stop();
    stats.record(duplicate('payments', 'b'));

    expect(seen).toEqual(['a']);
    expect(stats.duplicates).toBe(2);
  });
});
