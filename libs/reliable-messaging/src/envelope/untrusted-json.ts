import { UntrustedJsonError } from '../errors/untrusted-json.error';
import { DEFAULT_JSON_LIMITS, type JsonLimits } from '../options/json-limits.options';
import { excerpt, findJsonProblem } from './json-scanner';
import { decodeStrictUtf8 } from './strict-utf8';

export { DEFAULT_JSON_LIMITS, FORBIDDEN_JSON_KEYS, type JsonLimits } from '../options/json-limits.options';

/**
 * Parses a JSON body that came from outside, refusing with an {@link UntrustedJsonError} what would otherwise be
 * altered, crash a later stage or slip past validation: ill-formed UTF-8 (which a lenient decoder would replace
 * with U+FFFD), malformed JSON, and whatever breaks `limits` (envelope/json-scanner.ts: depth, sizes, forbidden
 * and duplicate keys, numbers JavaScript cannot hold, NUL and lone surrogates). The limits are checked by a scan
 * of the text before `JSON.parse` builds anything, so a depth bomb costs one pass over its bytes.
 */
export function parseUntrustedJson(body: Uint8Array, limits: Partial<JsonLimits> = {}): unknown {
  const decoded = decodeStrictUtf8(body);
  if (!decoded.ok) {
    throw new UntrustedJsonError(
      'invalid-utf8',
      '',
      `body is not valid UTF-8: ill-formed byte sequence at byte ${decoded.offset}`,
    );
  }
  const problem = findJsonProblem(decoded.text, { ...DEFAULT_JSON_LIMITS, ...limits });
  if (problem) throw problem;
  try {
    return JSON.parse(decoded.text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new UntrustedJsonError('malformed-json', '', `body is not valid JSON: ${excerpt(reason, 120)}`);
  }
}
