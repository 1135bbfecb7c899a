import { HEADERS } from 'nestjs-reliable-messaging';
import {
  consumerQueueOf,
  type DeadLetter,
  type OutboundMessage,
  republish,
  withoutBrokerHeaders,
  DEAD_LETTER_HEADERS,
} from 'nestjs-reliable-messaging/operations';

/** Dead-letter headers a replayed message keeps as its history; the rest describe the last failure only. */
const KEPT_HISTORY = new Set<string>([
  DEAD_LETTER_HEADERS.count,
  DEAD_LETTER_HEADERS.firstFailureAt,
  DEAD_LETTER_HEADERS.replayedAt,
]);

/** Retry bookkeeping a replay starts afresh. */
const RESET = new Set<string>([
  HEADERS.attempt,
  HEADERS.firstFailureAt,
  HEADERS.redeliveries,
  HEADERS.retryQueue,
]);

/** A claim check's headers: an edited message's new body is the whole message, so they no longer apply. */
const CLAIM_CHECK = new Set<string>([
  HEADERS.claimCheck,
  HEADERS.claimCheckBytes,
  HEADERS.claimCheckSha256,
  HEADERS.claimCheckField,
]);

/**
 * The message a replay publishes: to the default exchange with the consumer queue of the dead-letter queue the
 * message sits in as routing key, so it goes back to that queue alone (not to every queue bound to the event).
 * Never to a queue a header names: headers are what a publisher wrote, the queue it sits in is the broker's fact
 * (`rm-dead-letter-queue`, the exchange and the routing key travel on as history only). The same message id and idempotency key,
 * so the inbox applies it at most once however often it is replayed; the attempt count reset; the dead-letter
 * count and first failure time kept as history, so a replayed message that fails again dead-letters with both.
 * `body` replaces the body (an edited message): the whole message, so a claim check's reference is dropped; a
 * replay without an edit keeps the claim check, pointing at `claimCheck` when given: the replayed message's own
 * copy of the body (DeadLetterClaimCheck.copyForReplay).
 */
export function replayMessage(
  deadLetter: DeadLetter,
  replayedAt: Date,
  body?: Buffer,
  claimCheck?: string,
): OutboundMessage {
  const headers = withoutBrokerHeaders(deadLetter.headers);
  for (const name of Object.keys(headers)) {
    if (RESET.has(name) || (name.startsWith('rm-dead-letter-') && !KEPT_HISTORY.has(name)))
      delete headers[name];
    else if (body !== undefined && CLAIM_CHECK.has(name)) delete headers[name];
  }
  if (deadLetter.exchange !== undefined) headers[HEADERS.originalExchange] = deadLetter.exchange;
  if (deadLetter.routingKey !== undefined) headers[HEADERS.originalRoutingKey] = deadLetter.routingKey;
  headers[DEAD_LETTER_HEADERS.count] = deadLetter.deadLetterCount;
  if (deadLetter.firstFailureAt)
    headers[DEAD_LETTER_HEADERS.firstFailureAt] = deadLetter.firstFailureAt.toISOString();
  headers[DEAD_LETTER_HEADERS.replayedAt] = replayedAt.toISOString();
  if (body === undefined && claimCheck !== undefined) headers[HEADERS.claimCheck] = claimCheck;
  return republish(
    { content: deadLetter.body, properties: deadLetter.properties },
    { exchange: '', routingKey: consumerQueueOf(deadLetter.deadLetterQueue) },
    headers,
    { body },
  );
}
