/**
 * Strict JSON for input from outside, imported as `nestjs-reliable-messaging/safe-json`: the UTF-8 decoding the
 * message decoder applies to every delivery, and a parser with limits for HTTP bodies and other edges, so an app
 * refuses at its door what the module refuses at the queue.
 */

/** Parses a JSON body from outside within limits; refuses with an UntrustedJsonError naming the path and why. */
export {
  parseUntrustedJson,
  DEFAULT_JSON_LIMITS,
  FORBIDDEN_JSON_KEYS,
  type JsonLimits,
} from './envelope/untrusted-json';
/** Why `parseUntrustedJson()` refused a body, with the path of the offending value. */
export { UntrustedJsonError, type UntrustedJsonReason } from './errors/untrusted-json.error';
/** UTF-8 decoding that refuses ill-formed bytes instead of replacing them with U+FFFD. */
export { decodeStrictUtf8, type StrictUtf8Result } from './envelope/strict-utf8';
/** A string's length in code points, as PostgreSQL counts a `varchar(n)`. */
export { countCodePoints } from './envelope/code-points';
/**
 * Decodes a message body as strict UTF-8 and parses it as JSON within limits (default DEFAULT_JSON_LIMITS), as the
 * consumers do; an InvalidMessageError says why not (`malformed-json`, `forbidden-key`, `json-too-deep`, ...).
 */
export { parseJsonBody } from './envelope/safe-json';
/**
 * The scan both parsers run before JSON.parse: the UntrustedJsonError that `text` breaks `limits` with, or
 * undefined. It builds no object and never recurses, whatever the text.
 */
export { findJsonProblem } from './envelope/json-scanner';
