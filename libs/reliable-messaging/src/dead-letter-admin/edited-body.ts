import { JSON_CONTENT_TYPE } from '../reliable-messaging.constants';
import type { DeadLetter } from '../dead-letter/dead-letter-record';
import { parseJsonBody } from '../envelope/safe-json';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { errorMessage } from '../util/error-text';

/**
 * Refuses a new body for an edited dead letter that its consumer would refuse: above `maxPayloadBytes`, or,
 * for a JSON message (or one without a content type), not valid JSON as consumers parse it.
 */
export function checkEditedBody(deadLetter: DeadLetter, body: Buffer, maxPayloadBytes: number): void {
  if (body.length > maxPayloadBytes) {
    throw new InvalidDeadLetterQueryError(
      `the new body is ${body.length} bytes, above the limit of ${maxPayloadBytes} (maxPayloadBytes)`,
    );
  }
  const contentType = deadLetter.contentType?.split(';')[0].trim().toLowerCase();
  if (contentType === undefined || contentType === JSON_CONTENT_TYPE) {
    try {
      parseJsonBody(body);
    } catch (error) {
      throw new InvalidDeadLetterQueryError(
        `the new body is not accepted: ${error instanceof InvalidMessageError ? error.message : errorMessage(error)}`,
      );
    }
  }
}
