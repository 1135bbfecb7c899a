import { createHash } from 'node:crypto';
import type { Options } from 'amqplib';
import { HEADERS } from '../reliable-messaging.constants';

/**
 * How many buckets ordering keys hash into. Part of the wire format: a key's bucket is the first byte of the
 * SHA-256 digest of its UTF-8 bytes, so any client can compute it; changing the count would move every key.
 */
export const ORDERING_BUCKETS = 256;

/** The bucket of ordering key `key`: the first byte of SHA-256 over its UTF-8 bytes, 0 to 255. */
export function orderingBucket(key: string): number {
  return createHash('sha256').update(key, 'utf8').digest()[0];
}

/**
 * The routing key that carries bucket `bucket` to a key-ordered consumer's partition exchange: six words, so
 * that no ordinary binding on the events exchange matches it (`#` does, and the broker delivers a message once
 * per queue however many of its keys match).
 */
export function bucketRoutingKey(bucket: number): string {
  return `rm.ordering-key.bucket.${bucket}.of.${ORDERING_BUCKETS}`;
}

/**
 * `properties` with the bucket of their `rm-ordering-key` header as a BCC routing key: the broker routes on it
 * besides the message's own routing key, through every exchange the message passes, and strips it before
 * delivery. A key-ordered consumer's partition exchange routes on nothing else (OrderingTopology). Properties
 * without the header are returned as they are.
 */
export function withOrderingBucket(properties: Options.Publish): Options.Publish {
  const headers = properties.headers as Readonly<Record<string, unknown>> | undefined;
  const key = headers?.[HEADERS.orderingKey];
  if (typeof key !== 'string') return properties;
  return { ...properties, BCC: bucketRoutingKey(orderingBucket(key)) };
}
