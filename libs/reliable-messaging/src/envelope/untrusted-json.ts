import { UntrustedJsonError, type UntrustedJsonReason } from '../errors/untrusted-json.error';
import { countCodePoints } from './code-points';
import { decodeStrictUtf8 } from './strict-utf8';

/** What `parseUntrustedJson()` lets through. Every limit is checked on the text, before any object is built from it. */
export interface JsonLimits {
  /** Arrays and objects nested in each other at most, the outermost counting 1. Default 32. */
  maxDepth: number;
  /** Elements in one array at most. Default 10 000. */
  maxArrayLength: number;
  /** Keys in one object at most. Default 1 000. */
  maxObjectKeys: number;
  /** Characters (code points) in one key at most. Default 256. */
  maxKeyLength: number;
  /** Keys refused wherever they appear. Default {@link FORBIDDEN_JSON_KEYS}. */
  forbiddenKeys: ReadonlySet<string>;
}

/**
 * `prototype` and every member of `Object.prototype` (`__proto__`, `constructor`, `toString`, `hasOwnProperty`...).
 * A key with one of these names either reaches a prototype or shadows an inherited member, and class-transformer
 * and Nest's ValidationPipe skip or delete such keys without a word, so a whitelist never gets to refuse them.
 */
export const FORBIDDEN_JSON_KEYS: ReadonlySet<string> = new Set([
  'prototype',
  ...Object.getOwnPropertyNames(Object.prototype),
]);

/** The limits used where a caller sets none. */
export const DEFAULT_JSON_LIMITS: Readonly<JsonLimits> = Object.freeze({
  maxDepth: 32,
  maxArrayLength: 10_000,
  maxObjectKeys: 1_000,
  maxKeyLength: 256,
  forbiddenKeys: FORBIDDEN_JSON_KEYS,
});

/**
 * Parses a JSON body that came from outside, refusing with an {@link UntrustedJsonError} what would otherwise be
 * altered, crash a later stage or slip past validation: ill-formed UTF-8 (which a lenient decoder would replace
 * with U+FFFD), malformed JSON, nesting deeper than `maxDepth` (class-transformer recurses once per level), arrays,
 * objects and keys over their limits, forbidden and duplicate keys (a duplicate is read differently by different
 * parsers), and strings, keys included, holding U+0000 (which PostgreSQL cannot store) or a lone surrogate (which
 * no UTF-8 encoder can write faithfully).
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
  let value: unknown;
  try {
    value = JSON.parse(decoded.text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new UntrustedJsonError('malformed-json', '', `body is not valid JSON: ${excerpt(reason, 120)}`);
  }
  const problem = new JsonScanner(decoded.text, { ...DEFAULT_JSON_LIMITS, ...limits }).findProblem();
  if (problem) throw problem;
  return value;
}

/** An array or object the scanner is inside, and where in it the scanner stands. */
interface Frame {
  readonly keys: Set<string> | undefined;
  /** The element being read, for an array; the count of commas seen so far. */
  index: number;
  /** The key whose value is being read, for an object. */
  key: string | undefined;
  /** True between `{` or `,` and the next key, in an object. */
  expectingKey: boolean;
}

/**
 * Walks text that JSON.parse has already accepted, with a stack of its own instead of recursion, so any depth
 * is safe. Only brackets, commas and strings matter; numbers, literals, colons and whitespace are skipped.
 */
class JsonScanner {
  private readonly frames: Frame[] = [];

  constructor(
    private readonly text: string,
    private readonly limits: JsonLimits,
  ) {}

  findProblem(): UntrustedJsonError | undefined {
    const { text, frames, limits } = this;
    for (let at = 0; at < text.length; at += 1) {
      const char = text.charCodeAt(at);
      if (char === QUOTE) {
        const end = stringEnd(text, at);
        const problem = this.onString(text.slice(at, end + 1));
        if (problem) return problem;
        at = end;
      } else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
        if (frames.length >= limits.maxDepth) {
          return this.refuse('too-deep', this.valuePath(), `nests deeper than ${limits.maxDepth} levels`);
        }
        const isObject = char === OPEN_BRACE;
        frames.push({
          keys: isObject ? new Set() : undefined,
          index: 0,
          key: undefined,
          expectingKey: isObject,
        });
      } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
        frames.pop();
      } else if (char === COMMA) {
        const frame = frames[frames.length - 1];
        if (frame.keys) {
          frame.expectingKey = true;
        } else if ((frame.index += 1) >= limits.maxArrayLength) {
          return this.refuse(
            'too-many-elements',
            this.containerPath(),
            `must have at most ${limits.maxArrayLength} elements`,
          );
        }
      }
    }
    return undefined;
  }

  private onString(token: string): UntrustedJsonError | undefined {
    const frame = this.frames[this.frames.length - 1];
    const value = token.includes('\\') ? (JSON.parse(token) as string) : token.slice(1, -1);
    if (!frame?.keys || !frame.expectingKey) return this.checkText(value, this.valuePath(), '');
    const { limits } = this;
    const container = this.containerPath();
    const path = joinPath(container, value);
    if (limits.forbiddenKeys.has(value)) return this.refuse('forbidden-key', path, 'is a forbidden key');
    if (countCodePoints(value) > limits.maxKeyLength) {
      return this.refuse(
        'key-too-long',
        container,
        `has a key longer than ${limits.maxKeyLength} characters`,
      );
    }
    const textProblem = this.checkText(value, container, 'has a key that ');
    if (textProblem) return textProblem;
    if (frame.keys.has(value)) return this.refuse('duplicate-key', path, 'appears more than once');
    if (frame.keys.size >= limits.maxObjectKeys) {
      return this.refuse('too-many-keys', container, `must have at most ${limits.maxObjectKeys} keys`);
    }
    frame.keys.add(value);
    frame.key = value;
    frame.expectingKey = false;
    return undefined;
  }

  /** NUL and lone surrogates can only come from `\u` escapes: the text was decoded from well-formed UTF-8. */
  private checkText(value: string, path: string, subject: string): UntrustedJsonError | undefined {
    if (value.includes('\u0000')) {
      return this.refuse('nul-character', path, `${subject}must not contain NUL characters (U+0000)`);
    }
    const surrogate = LONE_SURROGATE.exec(value);
    if (surrogate) {
      const code = surrogate[0].charCodeAt(0).toString(16).toUpperCase();
      return this.refuse(
        'lone-surrogate',
        path,
        `${subject}must be well-formed Unicode, without a lone surrogate (U+${code})`,
      );
    }
    return undefined;
  }

  private refuse(reason: UntrustedJsonReason, path: string, problem: string): UntrustedJsonError {
    return new UntrustedJsonError(reason, path, `${path || 'body'} ${problem}`);
  }

  /** The path of the value being read: every open container's current key or index. */
  private valuePath(): string {
    return this.frames.reduce((path, frame) => joinPath(path, segment(frame)), '');
  }

  /** The path of the innermost open container. */
  private containerPath(): string {
    return this.frames.slice(0, -1).reduce((path, frame) => joinPath(path, segment(frame)), '');
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
// In a `u` regular expression a well-formed pair is one code point, so only lone surrogates are of category Cs.
const LONE_SURROGATE = /\p{Cs}/u;
const PLAIN_KEY = /^[A-Za-z_$][\w$-]{0,63}$/;

/** The index of the quote that closes the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  let at = start + 1;
  while (text.charCodeAt(at) !== QUOTE) at += text.charCodeAt(at) === BACKSLASH ? 2 : 1;
  return at;
}

function segment(frame: Frame): string {
  return frame.keys ? (frame.key ?? '') : String(frame.index);
}

/** Appends a key to a dotted path; a key that is not a plain name is quoted, and cut short when long. */
function joinPath(path: string, key: string): string {
  const shown = PLAIN_KEY.test(key) || /^\d+$/.test(key) ? key : JSON.stringify(excerpt(key, 32));
  return path ? `${path}.${shown}` : shown;
}

/** `text` cut to `max` code units, with an ellipsis when cut. */
function excerpt(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
