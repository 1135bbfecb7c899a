import { describe, expect, it } from '@jest/globals';
import { bucketRoutingKey, orderingBucket, ORDERING_BUCKETS, withOrderingBucket } from './ordering-bucket';

describe('ordering buckets', () => {
  it('hashes a key to the first byte of the SHA-256 of its UTF-8 bytes, which any client can reproduce', () => {
    // Values from `printf %s <key> | sha256sum`, first two hex digits.
    expect(orderingBucket('order-1')).toBe(0x0b);
    expect(orderingBucket('account-42')).toBe(0xbe);
    expect(orderingBucket('é-ü-key')).toBe(0xee);
    expect(orderingBucket('')).toBe(0xe3);
  });

  it('spreads keys over all 256 buckets', () => {
    const seen = new Set(Array.from({ length: 10_000 }, (_, i) => orderingBucket(`key-${i}`)));
    expect(seen.size).toBe(ORDERING_BUCKETS);
  });

  it('adds the bucket of the ordering-key header as a BCC routing key of six words', () => {
    const properties = withOrderingBucket({ messageId: 'm-1', headers: { 'rm-ordering-key': 'order-1' } });

    expect(properties.BCC).toBe('rm.ordering-key.bucket.11.of.256');
    expect(bucketRoutingKey(11).split('.')).toHaveLength(6);
    expect(properties.headers).toEqual({ 'rm-ordering-key': 'order-1' });
  });

  it('leaves properties without an ordering key (or with one that is not a string) as they are', () => {
    const none = { messageId: 'm-2', headers: {} };
    const forged = { messageId: 'm-3', headers: { 'rm-ordering-key': 42 } };

    expect(withOrderingBucket(none)).toBe(none);
    expect(withOrderingBucket(forged)).toBe(forged);
  });
});
