import { describe, expect, it } from '@jest/globals';
import { messageTypeLabeller, OTHER_TYPE } from './message-type-label';

describe('messageTypeLabeller', () => {
  it('labels only the declared types of a consumer that declares them', () => {
    const label = messageTypeLabeller(['order.placed', 'order.paid']);
    expect(['order.placed', 'order.paid', 'order.cancelled', undefined, 42].map(label)).toEqual([
      'order.placed',
      'order.paid',
      OTHER_TYPE,
      OTHER_TYPE,
      OTHER_TYPE,
    ]);
  });

  it('labels the first maxDistinct well-formed types of a consumer that accepts any, then `other`', () => {
    const label = messageTypeLabeller([], 2);
    expect(
      ['a.one', 'b.two', 'a.one', 'c.three', 'bad type with spaces', 'x'.repeat(101)].map(label),
    ).toEqual(['a.one', 'b.two', 'a.one', OTHER_TYPE, OTHER_TYPE, OTHER_TYPE]);
  });
});
