import { SagaRefusedError } from '../errors/saga-refused.error';
import { errorMessage } from '../util/error-text';

/** The longest correlation key accepted, in UTF-16 code units. */
export const MAX_CORRELATION_KEY_LENGTH = 256;

// Control characters would make keys that look alike in logs and the console, and PostgreSQL refuses NUL in text.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The correlation key `correlate` reads from `message`, checked: the key comes from a message body, so it is a
 * claim to check before it selects a row. A string of 1 to 256 code units, well-formed (no lone surrogate, which
 * the driver would silently replace) and without control characters, or a safe integer (its decimal form). It is
 * only ever a query parameter, never an object key. Anything else, or a `correlate` that throws, refuses the
 * message for good (`saga-correlation-invalid`): another attempt would read the same body.
 */
export function correlationKey(
  correlate: (message: object) => unknown,
  message: object,
  step: string,
): string {
  let value: unknown;
  try {
    value = correlate(message);
  } catch (error) {
    throw new SagaRefusedError(
      'saga-correlation-invalid',
      `${step}: correlate threw: ${errorMessage(error)}`,
      {
        cause: error,
      },
    );
  }
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (typeof value !== 'string') {
    throw new SagaRefusedError(
      'saga-correlation-invalid',
      `${step}: correlate must return a string or a safe integer, got ${value === null ? 'null' : typeof value}`,
    );
  }
  if (value.length === 0 || value.length > MAX_CORRELATION_KEY_LENGTH) {
    throw new SagaRefusedError(
      'saga-correlation-invalid',
      `${step}: the correlation key must have 1 to ${MAX_CORRELATION_KEY_LENGTH} characters, got ${value.length}`,
    );
  }
  if (LONE_SURROGATE.test(value) || CONTROL.test(value)) {
    throw new SagaRefusedError(
      'saga-correlation-invalid',
      `${step}: the correlation key holds a control character or a lone surrogate`,
    );
  }
  return value;
}
