/**
 * A dead-letter tool was asked something it cannot do as asked: a malformed filter or time, a batch above the
 * limit, a replay or purge with no selection, an edited body that is not valid JSON. The message says what to
 * change. The admin API answers it with 400.
 */
export class InvalidDeadLetterQueryError extends Error {
  override readonly name = 'InvalidDeadLetterQueryError';
}
