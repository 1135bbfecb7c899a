import sjson from 'secure-json-parse';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { decodeStrictUtf8 } from './strict-utf8';

/**
 * Decodes a body as strict UTF-8 and parses it as JSON, refusing `__proto__` and `constructor.prototype` keys
 * so a hostile payload can never pollute prototypes. Each failure is an InvalidMessageError with its own reason.
 */
export function parseJsonBody(body: Buffer): unknown {
  const decoded = decodeStrictUtf8(body);
  if (!decoded.ok) throw new InvalidMessageError('invalid-utf8', 'body is not valid UTF-8');
  const { text } = decoded;
  try {
    return cannotHideForbiddenKeys(text)
      ? JSON.parse(text)
      : sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/prototype/i.test(message)) {
      throw new InvalidMessageError('forbidden-key', `body contains a forbidden key (${message})`);
    }
    throw new InvalidMessageError('malformed-json', `body is not valid JSON (${message})`);
  }
}

/**
 * Whether `text` surely has neither a `__proto__` nor a `constructor` key, nor a byte-order mark to strip.
 *
 * NOTE: secure-json-parse runs two regular expressions over the whole text after parsing it, to find those keys
 * written plainly or with `\u` escapes; both need the plain name or a backslash, which three substring searches
 * rule out far faster, so most bodies are parsed with JSON.parse alone.
 */
function cannotHideForbiddenKeys(text: string): boolean {
  return (
    text.charCodeAt(0) !== 0xfeff &&
    !text.includes('\\') &&
    !text.includes('__proto__') &&
    !text.includes('constructor')
  );
}
