import { createHash } from 'node:crypto';

/** What identifies a request for its idempotency key: a retry must match it exactly. */
export interface RequestFingerprintInput {
  method: string;
  /** The path and query, as sent. */
  path: string;
  /** The parsed body; undefined for a request without one. */
  body: unknown;
}

/**
 * SHA-256, hex, of the method, the path and the body written as canonical JSON (object keys sorted, no
 * whitespace). The parsed body rather than the raw bytes: the interceptor sees only what the body parser made of
 * them, and a retry that formats or orders its JSON differently is the same request, so it must not get a 422.
 */
export function requestFingerprint({ method, path, body }: RequestFingerprintInput): string {
  return createHash('sha256')
    .update(JSON.stringify([method.toUpperCase(), path, canonicalJson(body)]))
    .digest('hex');
}

/**
 * `value` as JSON with every object's keys in sorted order, so two equal bodies give one string.
 *
 * Written out directly rather than by building a sorted copy for JSON.stringify: `JSON.parse` (Express' and
 * Nest's default body parser) makes a `"__proto__"` member an own data property, and assigning it to a plain
 * copy would set the copy's prototype instead, which JSON.stringify never writes, so `{"__proto__":{"a":1}}` and
 * `{"__proto__":{"a":2}}` would share one fingerprint. A parser that did set such a member as the prototype
 * (plain assignment) leaves the data there, so an object whose prototype is another plain object is written with
 * that prototype as its `"__proto__"` member.
 */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return '';
  return write(value) ?? '';
}

/** The canonical JSON of `value`, or undefined where JSON.stringify leaves a value out (functions, symbols). */
function write(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return write((value as { toJSON(): unknown }).toJSON());
  }
  if (Array.isArray(value)) return `[${value.map((item) => write(item) ?? 'null').join(',')}]`;
  const members: string[] = [];
  for (const key of Object.keys(value).sort()) {
    const written = write((value as Record<string, unknown>)[key]);
    if (written !== undefined) members.push(`${JSON.stringify(key)}:${written}`);
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== null && prototype !== Object.prototype && isParsedData(prototype as object)) {
    members.push(`"__proto__":${write(prototype)}`);
  }
  return `{${members.join(',')}}`;
}

/** Whether a prototype was made by a parser from data: a class's prototype owns its `constructor` function. */
function isParsedData(prototype: object): boolean {
  return typeof Object.getOwnPropertyDescriptor(prototype, 'constructor')?.value !== 'function';
}
