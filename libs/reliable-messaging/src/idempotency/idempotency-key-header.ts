/** The longest idempotency key taken, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** What an `Idempotency-Key` header held: no header, a usable key, or why it is refused. */
export type IdempotencyKeyReading =
  { kind: 'absent' } | { kind: 'key'; key: string } | { kind: 'invalid'; problem: string };

const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/**
 * Reads the `Idempotency-Key` header's values (one entry per header line, as Node's `headersDistinct` gives them).
 * The draft (draft-ietf-httpapi-idempotency-key-header) makes the value a Structured Field string,
 * `"8e03978e-40d5-43e8-bc93-6894a57f9324"`; a bare value without the quotes is taken as it is too, since many
 * clients send one. The key, unquoted, must be 1 to 255 printable ASCII characters (space to `~`).
 */
export function readIdempotencyKey(values: readonly string[] | undefined): IdempotencyKeyReading {
  if (values === undefined || values.length === 0) return { kind: 'absent' };
  if (values.length > 1) {
    return { kind: 'invalid', problem: 'Idempotency-Key must be sent once; got it more than once' };
  }
  const raw = values[0].trim();
  const key = raw.startsWith('"') ? unquote(raw) : raw;
  if (key === undefined) {
    return {
      kind: 'invalid',
      problem: 'Idempotency-Key must be a string, quoted as "..." with only \\" and \\\\ escaped, or bare',
    };
  }
  if (key.length === 0) return { kind: 'invalid', problem: 'Idempotency-Key must not be empty' };
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    return {
      kind: 'invalid',
      problem: `Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters; got ${key.length}`,
    };
  }
  if (!PRINTABLE_ASCII.test(key)) {
    return {
      kind: 'invalid',
      problem: 'Idempotency-Key must hold printable ASCII characters only (space to ~)',
    };
  }
  return { kind: 'key', key };
}

/** The content of a Structured Field string (RFC 8941 §3.3.3), or undefined when it is not one. */
function unquote(raw: string): string | undefined {
  if (raw.length < 2 || !raw.endsWith('"')) return undefined;
  let key = '';
  for (let i = 1; i < raw.length - 1; i++) {
    const char = raw[i];
    if (char === '\\') {
      const next = raw[++i];
      if (next !== '"' && next !== '\\') return undefined;
      key += next;
    } else if (char === '"') {
      return undefined;
    } else {
      key += char;
    }
  }
  return key;
}
