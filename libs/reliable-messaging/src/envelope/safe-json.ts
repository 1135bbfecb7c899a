import { InvalidMessageError, type InvalidMessageReason } from '../errors/invalid-message.error';
import type { UntrustedJsonError, UntrustedJsonReason } from '../errors/untrusted-json.error';
import { DEFAULT_JSON_LIMITS, type JsonLimits } from '../options/json-limits.options';
import { findJsonProblem } from './json-scanner';
import { decodeStrictUtf8 } from './strict-utf8';

/**
 * Decodes a body as strict UTF-8 and parses it as JSON within `limits` (the module's `jsonLimits`), checked by a
 * scan of the text before any object is built (envelope/json-scanner.ts), so a hostile payload can neither
 * pollute prototypes nor nest deep enough to overflow a later stage's stack. Each failure is an
 * InvalidMessageError with its own reason (`malformed-json`, `forbidden-key`, `json-too-deep`, ...), which is
 * dead-lettered at once, never retried. Leading byte order marks are skipped.
 */
export function parseJsonBody(body: Uint8Array, limits: Readonly<JsonLimits> = DEFAULT_JSON_LIMITS): unknown {
  const decoded = decodeStrictUtf8(body);
  if (!decoded.ok) throw new InvalidMessageError('invalid-utf8', 'body is not valid UTF-8');
  const text = withoutByteOrderMarks(decoded.text);
  const problem = findJsonProblem(text, limits);
  if (problem) throw asInvalidMessage(problem);
  try {
    return JSON.parse(text);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new InvalidMessageError('malformed-json', `body is not valid JSON (${message.slice(0, 120)})`);
  }
}

/** The limit each refusal names, so an operator knows which option to look at. */
const LIMIT_OF: Partial<Record<UntrustedJsonReason, keyof JsonLimits>> = {
  'too-deep': 'maxDepth',
  'too-many-elements': 'maxArrayLength',
  'too-many-keys': 'maxObjectKeys',
  'key-too-long': 'maxKeyLength',
  'string-too-long': 'maxStringLength',
  'forbidden-key': 'forbiddenKeys',
};

/** The scan's refusal as the decoder reports it: `forbidden-key` as before, every other limit as `json-<reason>`. */
export function asInvalidMessage(problem: UntrustedJsonError): InvalidMessageError {
  const limit = LIMIT_OF[problem.reason];
  const named = limit ? ` (jsonLimits.${limit})` : '';
  if (problem.reason === 'forbidden-key') {
    return new InvalidMessageError(
      'forbidden-key',
      `body contains a forbidden key: ${problem.message}${named}`,
    );
  }
  const reason: InvalidMessageReason =
    problem.reason === 'invalid-utf8' || problem.reason === 'malformed-json'
      ? problem.reason
      : `json-${problem.reason}`;
  return new InvalidMessageError(reason, `${problem.message}${named}`);
}

/**
 * NOTE: a byte order mark is not JSON, but some producers write one (and secure-json-parse, which this decoder
 * used before, skipped them); refusing them now would dead-letter messages that used to pass.
 */
function withoutByteOrderMarks(text: string): string {
  let start = 0;
  while (text.charCodeAt(start) === 0xfeff) start += 1;
  return start === 0 ? text : text.slice(start);
}
