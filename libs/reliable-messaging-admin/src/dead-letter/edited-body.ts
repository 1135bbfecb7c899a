import { HEADERS, InvalidMessageError } from 'nestjs-reliable-messaging';
import { type DeadLetter, errorMessage, JSON_CONTENT_TYPE } from 'nestjs-reliable-messaging/operations';
import { DEFAULT_JSON_LIMITS, parseJsonBody, type JsonLimits } from 'nestjs-reliable-messaging/safe-json';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';

/**
 * Refuses a new body for an edited dead letter that its consumer would refuse: above `maxPayloadBytes`, or,
 * for a JSON message (or one without a content type), not valid JSON within `jsonLimits` as consumers parse it (the
 * refusal names the limit, `jsonLimits.maxDepth`...); or, for a dead letter
 * whose property was claim-checked, a body without that property: the replay drops the claim check, so the edit
 * must give the whole message, and leaving the property out would drop it silently.
 */
export function checkEditedBody(
  deadLetter: DeadLetter,
  body: Buffer,
  maxPayloadBytes: number,
  jsonLimits: Readonly<JsonLimits> = DEFAULT_JSON_LIMITS,
): void {
  if (body.length > maxPayloadBytes) {
    throw new InvalidDeadLetterQueryError(
      `the new body is ${body.length} bytes, above the limit of ${maxPayloadBytes} (maxPayloadBytes)`,
    );
  }
  const contentType = deadLetter.contentType?.split(';')[0].trim().toLowerCase();
  if (contentType === undefined || contentType === JSON_CONTENT_TYPE) {
    let parsed: unknown;
    try {
      parsed = parseJsonBody(body, jsonLimits);
    } catch (error) {
      throw new InvalidDeadLetterQueryError(
        `the new body is not accepted: ${error instanceof InvalidMessageError ? error.message : errorMessage(error)}`,
      );
    }
    const field = claimCheckedField(deadLetter);
    if (
      field !== undefined &&
      (typeof parsed !== 'object' || parsed === null || !Object.prototype.hasOwnProperty.call(parsed, field))
    ) {
      throw new InvalidDeadLetterQueryError(
        `the dead letter's '${field}' is kept in the claim-check store, not in its body, and an edit replaces the ` +
          `whole message: give a body with '${field}' (show the dead letter for its whole message, or edit with --set)`,
      );
    }
  }
}

/** The property a dead letter's claim check stored, if one was. */
function claimCheckedField(deadLetter: DeadLetter): string | undefined {
  const field = deadLetter.headers[HEADERS.claimCheckField];
  if (typeof field === 'string') return field;
  return Buffer.isBuffer(field) ? field.toString('utf8') : undefined;
}
