import { describe, expect, it } from '@jest/globals';
import { NO_MESSAGE_ID } from '../../dead-letter/dead-letter-operation';
import { pinnedSelection, selectionOf } from './console-selection';

describe('pinnedSelection', () => {
  const byFilter = { queue: 'orders.payment', reason: 'validation-failed', all: '1' };

  it('carries the ids the dry run found, and the queue, in place of the filter', () => {
    const pinned = pinnedSelection(byFilter, ['m-1', 'm-2']);

    expect(pinned).toEqual({ queue: 'orders.payment', id: ['m-1', 'm-2'] });
    expect(selectionOf(pinned)).toMatchObject({
      queue: 'orders.payment',
      messageIds: ['m-1', 'm-2'],
      all: false,
    });
  });

  it('carries the selection as given when the dry run found nothing, or a dead letter no id names', () => {
    expect(pinnedSelection(byFilter, [])).toBe(byFilter);
    expect(pinnedSelection(byFilter, ['m-1', NO_MESSAGE_ID])).toBe(byFilter);
  });
});
