import { bodyText, type DeadLetter, headerDate } from 'nestjs-reliable-messaging/operations';
import { DEFAULT_JSON_LIMITS, findJsonProblem, type JsonLimits } from 'nestjs-reliable-messaging/safe-json';
import { claimedQueueWarning } from './claimed-queue-warning';
import type { DeadLetterSummary } from './dead-letter-summary';

/**
 * A JSON-friendly view for the CLI and the admin API: dates as ISO strings, the body parsed when it is JSON
 * within `jsonLimits`, as text when it is UTF-8, else base64 (a claim-checked one's whole message when `show()`
 * read it, with `bodyFromClaimCheck`); header values made printable. A body that is JSON but breaks the limits
 * (a dead letter refused as `json-too-deep`, say) is shown as text with a `bodyNote` saying why: parsed, it
 * could overflow the stack of whatever serialises the view. A summary (a list's) gives the body's size alone.
 * A dead letter whose header claims another queue than the one it sits in carries `claimedQueue` and a `warning`.
 */
export function describeDeadLetter(deadLetter: DeadLetterSummary | DeadLetter): Record<string, unknown>;
export function describeDeadLetter(
  deadLetter: DeadLetter,
  full: true,
  jsonLimits?: Readonly<JsonLimits>,
): Record<string, unknown>;
export function describeDeadLetter(
  deadLetter: DeadLetterSummary | DeadLetter,
  full = false,
  jsonLimits: Readonly<JsonLimits> = DEFAULT_JSON_LIMITS,
): Record<string, unknown> {
  const summary: Record<string, unknown> = {
    messageId: deadLetter.messageId,
    queue: deadLetter.queue,
    deadLetterQueue: deadLetter.deadLetterQueue,
    ...(deadLetter.claimedQueue !== undefined
      ? { claimedQueue: deadLetter.claimedQueue, warning: claimedQueueWarning(deadLetter) }
      : {}),
    type: deadLetter.type,
    reason: deadLetter.reason,
    errorClass: deadLetter.errorClass,
    errorMessage: deadLetter.errorMessage,
    attempts: deadLetter.attempts,
    deadLetterCount: deadLetter.deadLetterCount,
    firstFailureAt: deadLetter.firstFailureAt?.toISOString(),
    deadLetteredAt: deadLetter.deadLetteredAt?.toISOString(),
    replayedAt: deadLetter.replayedAt?.toISOString(),
    bodyBytes: 'body' in deadLetter ? deadLetter.body.length : deadLetter.bodyBytes,
  };
  if (!full || !('body' in deadLetter)) return summary;
  const textBody = bodyText(deadLetter);
  let body: unknown = textBody;
  let bodyEncoding: 'json' | 'utf-8' | 'base64' = 'utf-8';
  let bodyNote: string | undefined;
  if (textBody === undefined) {
    body = (deadLetter.fullBody ?? deadLetter.body).toString('base64');
    bodyEncoding = 'base64';
  } else {
    const problem = findJsonProblem(textBody, jsonLimits);
    if (problem) {
      bodyNote = `not JSON within limits: ${problem.message}`;
    } else {
      try {
        body = JSON.parse(textBody);
        bodyEncoding = 'json';
      } catch {
        // NOTE: a UTF-8 body that is not JSON is shown as text.
      }
    }
  }
  return {
    ...summary,
    idempotencyKey: deadLetter.idempotencyKey,
    correlationId: deadLetter.correlationId,
    handler: deadLetter.handler,
    host: deadLetter.host,
    exchange: deadLetter.exchange,
    routingKey: deadLetter.routingKey,
    errorStack: deadLetter.errorStack,
    contentType: deadLetter.contentType,
    headers: printable(deadLetter.headers),
    bodyEncoding,
    ...(bodyNote ? { bodyNote } : {}),
    ...(deadLetter.fullBody ? { bodyFromClaimCheck: true } : {}),
    body,
  };
}

function printable(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  if (Array.isArray(value)) return value.map(printable);
  if (typeof value === 'object' && value !== null) {
    if ((value as { '!'?: unknown })['!'] === 'timestamp') return headerDate(value)?.toISOString();
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, printable(inner)]));
  }
  return value;
}
