/** Headers the broker writes when it dead-letters or redelivers a message (x-death and its summaries, x-delivery-count). */
const BROKER_HEADERS = new Set([
  'x-death',
  'x-first-death-reason',
  'x-first-death-queue',
  'x-first-death-exchange',
  'x-last-death-reason',
  'x-last-death-queue',
  'x-last-death-exchange',
  'x-delivery-count',
]);

/**
 * A copy of `headers` without the broker's own bookkeeping, for a message the module publishes again (a retry,
 * a redelivery checkpoint, a dead letter, a replay).
 *
 * NOTE: RabbitMQ drops a message that is dead-lettered twice by the same queue with no rejection in between
 * ("dead-letter cycle"), and it reads that history from the x-death header, also when a client republished
 * the message with it (3.12 and earlier, and again from 3.13.3). A retry that went through a delay level
 * before would be silently dropped the next time it expires from that level, so these headers never travel on.
 */
export function withoutBrokerHeaders(headers: Record<string, unknown> | undefined): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!BROKER_HEADERS.has(name.toLowerCase())) copy[name] = value;
  }
  return copy;
}
