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

/** One object or array being written: its members (an object's sorted keys), how far it got, and whether it wrote one. */
interface Frame {
  value: unknown;
  /** An object's keys in sorted order (a parsed prototype's `"__proto__"` last); undefined for an array. */
  keys: string[] | undefined;
  /** Whether the last key stands for the parsed prototype rather than an own member. */
  prototypeLast: boolean;
  next: number;
  written: boolean;
}

/**
 * The canonical JSON of `value`, or undefined where JSON.stringify leaves a value out (functions, symbols).
 * Written in one pass with a stack of its own rather than by recursion: a body nested tens of thousands deep
 * (Express' parser sets no depth limit) must get a fingerprint in linear time, not overflow the stack as a 500.
 */
function write(root: unknown): string | undefined {
  const scalar = leaf(root);
  if (scalar !== CONTAINER) return scalar;
  const out: string[] = [];
  const stack: Frame[] = [open(resolved(root), out)];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    const { keys } = frame;
    const length = keys ? keys.length : (frame.value as unknown[]).length;
    if (frame.next >= length) {
      out.push(keys ? '}' : ']');
      stack.pop();
      continue;
    }
    const index = frame.next++;
    const key = keys?.[index];
    const value = memberOf(frame, key, index);
    const written = leaf(value);
    // An object leaves out a member JSON cannot hold; an array writes it as null.
    if (written === undefined && keys) continue;
    if (frame.written) out.push(',');
    frame.written = true;
    if (key !== undefined) out.push(`${JSON.stringify(key)}:`);
    if (written === CONTAINER) stack.push(open(resolved(value), out));
    else out.push(written ?? 'null');
  }
  return out.join('');
}

/** A frame's member: an array's item, an object's property, or the parsed prototype written as `"__proto__"`. */
function memberOf(frame: Frame, key: string | undefined, index: number): unknown {
  if (key === undefined) return (frame.value as unknown[])[index];
  if (frame.prototypeLast && index === (frame.keys as string[]).length - 1)
    return Object.getPrototypeOf(frame.value);
  return (frame.value as Record<string, unknown>)[key];
}

const CONTAINER = Symbol('container');

/** A value's JSON when it is not an object or array (after `toJSON`), else CONTAINER. */
function leaf(value: unknown): string | undefined | typeof CONTAINER {
  const plain = resolved(value);
  if (plain === null || typeof plain !== 'object') return JSON.stringify(plain);
  return CONTAINER;
}

/** `value` after its `toJSON`, as JSON.stringify sees it. */
function resolved(value: unknown): unknown {
  let current = value;
  for (let turns = 0; turns < 8; turns += 1) {
    if (current === null || typeof current !== 'object') return current;
    if (typeof (current as { toJSON?: unknown }).toJSON !== 'function') return current;
    current = (current as { toJSON(): unknown }).toJSON();
  }
  return current;
}

/** Writes a container's opening and returns its frame. */
function open(value: unknown, out: string[]): Frame {
  if (Array.isArray(value)) {
    out.push('[');
    return { value, keys: undefined, prototypeLast: false, next: 0, written: false };
  }
  out.push('{');
  const keys = Object.keys(value as object).sort();
  const prototype: unknown = Object.getPrototypeOf(value);
  const prototypeLast =
    prototype !== null && prototype !== Object.prototype && isParsedData(prototype as object);
  if (prototypeLast) keys.push('__proto__');
  return { value, keys, prototypeLast, next: 0, written: false };
}

/** Whether a prototype was made by a parser from data: a class's prototype owns its `constructor` function. */
function isParsedData(prototype: object): boolean {
  return typeof Object.getOwnPropertyDescriptor(prototype, 'constructor')?.value !== 'function';
}
