import { UntrustedJsonError, type UntrustedJsonReason } from '../errors/untrusted-json.error';
import type { JsonLimits } from '../options/json-limits.options';
import { countCodePoints } from './code-points';

/**
 * Checks JSON text against `limits` without building anything from it, so a body that breaks them is refused
 * before `JSON.parse` and class-transformer spend memory and stack on it. Returns the refusal, or undefined when
 * the text keeps every limit (it may still be malformed: the scan judges shape, not syntax, and leaves that to
 * `JSON.parse`, which must run next). On text `JSON.parse` accepts, the scan sees exactly the tokens it reads.
 *
 * One linear pass with a stack of its own instead of recursion, so any depth is safe; its stack never grows past
 * `maxDepth`. It refuses, naming the dotted path of the value:
 * - nesting deeper than `maxDepth`, arrays longer than `maxArrayLength`, objects with more than `maxObjectKeys`;
 * - keys longer than `maxKeyLength`, strings longer than `maxStringLength` (code points, escapes decoded);
 * - a key of `forbiddenKeys`, a key twice in one object (parsers disagree on which one wins), escaped or not;
 * - a number `JSON.parse` would turn into ±Infinity (`1e400`), and an integer written without fraction or exponent
 *   beyond ±(2^53 − 1), which JavaScript cannot hold exactly (`9007199254740993` would read as ...992): send
 *   such ids as strings;
 * - NUL (U+0000, which PostgreSQL cannot store) and lone surrogates (which no UTF-8 encoder writes faithfully) in
 *   strings and keys. These can only come from `\u` escapes in text decoded from well-formed UTF-8, which is what
 *   the parsers pass; a caller with text from elsewhere must check raw surrogates itself.
 */
export function findJsonProblem(text: string, limits: JsonLimits): UntrustedJsonError | undefined {
  return new JsonScanner(text, limits).scan();
}

/**
 * An array or object the scanner is inside, and where in it the scanner stands.
 *
 * NOTE: an object's keys are kept as offsets into the text, and compared there, until one needs its decoded
 * string (an escaped key, or more keys than a linear search suits): slicing every key into a string of its own
 * made the scan cost more than `JSON.parse`. For the same reason a frame is reused by every container at its
 * depth rather than made for each.
 */
interface Frame {
  isObject: boolean;
  /** Keys seen so far in an object. */
  keyCount: number;
  /**
   * Where each key's text starts and ends (inside its quotes), while no key of the object is escaped; the first
   * `keyCount` entries are this object's, any after them a former one's at the same depth.
   */
  readonly keyStarts: number[];
  readonly keyEnds: number[];
  /** Every key decoded, once the offsets no longer do; a Set beside them for large objects. */
  keyNames: string[] | undefined;
  keySet: Set<string> | undefined;
  /** The element being read, for an array: the count of commas seen so far. */
  index: number;
  /** The key whose value is being read, for an object: its offsets, or its decoded name if it was escaped. */
  keyStart: number;
  keyEnd: number;
  keyName: string | undefined;
  /** True between `{` or `,` and the next key, in an object. */
  expectingKey: boolean;
}

/** Strings up to this many code units are read by the scan itself: a native search costs more for them. */
const SHORT_STRING = 32;

/** Keys of one object compared one by one up to this many; a Set beyond. */
const LINEAR_KEY_SEARCH = 16;

/** `length * 65536 + first code unit` of every forbidden key, so most keys are cleared without a string. */
const forbiddenShapes = new WeakMap<ReadonlySet<string>, Set<number>>();

function shapesOf(forbiddenKeys: ReadonlySet<string>): Set<number> {
  let shapes = forbiddenShapes.get(forbiddenKeys);
  if (!shapes) {
    shapes = new Set([...forbiddenKeys].map((key) => shapeOf(key, 0, key.length)));
    forbiddenShapes.set(forbiddenKeys, shapes);
  }
  return shapes;
}

function shapeOf(text: string, start: number, end: number): number {
  return (end - start) * 65_536 + (end > start ? text.charCodeAt(start) : 0);
}

class JsonScanner {
  /** One frame per depth, reused; the first `depth` are the open containers. */
  private readonly frames: Frame[] = [];
  private depth = 0;
  /** The first backslash at or after the scan position, or the text's length: one search for many strings. */
  private nextBackslash = -1;
  /** Whether the string `stringEnd()` last closed holds an escape. */
  private escaped = false;
  /** Where the number `onNumber()` last read ends. */
  private numberEnd = 0;
  private readonly forbiddenShapes: Set<number>;

  constructor(
    private readonly text: string,
    private readonly limits: JsonLimits,
  ) {
    this.forbiddenShapes = shapesOf(limits.forbiddenKeys);
  }

  scan(): UntrustedJsonError | undefined {
    const { text, frames, limits } = this;
    const { length } = text;
    const { maxDepth, maxArrayLength } = limits;
    let at = 0;
    while (at < length) {
      const char = text.charCodeAt(at);
      // Colons and whitespace, most of what lies between tokens, matter to no limit.
      if (char === COLON || char <= SPACE) {
        at += 1;
        continue;
      }
      if (char === QUOTE) {
        const end = this.stringEnd(at);
        // An unclosed string ends the scan; JSON.parse says what is wrong.
        if (end < 0) return undefined;
        const problem = this.onString(at, end);
        if (problem) return problem;
        at = end + 1;
        continue;
      }
      if ((char >= DIGIT_0 && char <= DIGIT_9) || char === MINUS) {
        const problem = this.onNumber(at);
        if (problem) return problem;
        at = this.numberEnd;
        continue;
      }
      if (char === OPEN_BRACE || char === OPEN_BRACKET) {
        if (this.depth >= maxDepth) {
          return this.refuse('too-deep', this.valuePath(), `nests deeper than ${maxDepth} levels`);
        }
        this.open(char === OPEN_BRACE);
      } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
        if (this.depth > 0) this.depth -= 1;
      } else if (char === COMMA && this.depth > 0) {
        const frame = frames[this.depth - 1];
        if (frame.isObject) {
          frame.expectingKey = true;
        } else if ((frame.index += 1) >= maxArrayLength) {
          return this.refuse(
            'too-many-elements',
            this.containerPath(),
            `must have at most ${maxArrayLength} elements`,
          );
        }
      }
      at += 1;
    }
    return undefined;
  }

  private open(isObject: boolean): void {
    let frame = this.frames[this.depth];
    if (frame === undefined) {
      frame = {
        isObject,
        keyCount: 0,
        keyStarts: [],
        keyEnds: [],
        keyNames: undefined,
        keySet: undefined,
        index: 0,
        keyStart: 0,
        keyEnd: 0,
        keyName: undefined,
        expectingKey: isObject,
      };
      this.frames.push(frame);
    } else {
      frame.isObject = isObject;
      frame.keyCount = 0;
      frame.keyNames = undefined;
      frame.keySet = undefined;
      frame.index = 0;
      frame.keyStart = 0;
      frame.keyEnd = 0;
      frame.keyName = undefined;
      frame.expectingKey = isObject;
    }
    this.depth += 1;
  }

  /**
   * The index of the quote that closes the string opening at `start`, or -1 when none does. A short string is
   * read here, a long one found by a native search; only a string with a backslash before its end is walked
   * character by character.
   */
  private stringEnd(start: number): number {
    const { text } = this;
    const shortEnd = Math.min(start + SHORT_STRING, text.length);
    for (let at = start + 1; at < shortEnd; at += 1) {
      const char = text.charCodeAt(at);
      if (char === QUOTE) {
        this.escaped = false;
        return at;
      }
      if (char === BACKSLASH) {
        this.nextBackslash = at;
        break;
      }
    }
    const quote = text.indexOf('"', start + 1);
    if (quote < 0) return -1;
    if (this.nextBackslash < start) {
      const backslash = text.indexOf('\\', start + 1);
      this.nextBackslash = backslash < 0 ? text.length : backslash;
    }
    if (this.nextBackslash > quote) {
      this.escaped = false;
      return quote;
    }
    this.escaped = true;
    for (let at = this.nextBackslash; at < text.length;) {
      const char = text.charCodeAt(at);
      if (char === QUOTE) return at;
      at += char === BACKSLASH ? 2 : 1;
    }
    return -1;
  }

  private onString(start: number, end: number): UntrustedJsonError | undefined {
    const { text, limits, escaped } = this;
    const frame = this.frames[this.depth - 1];
    const isKey = this.depth > 0 && frame.isObject && frame.expectingKey;
    // Most values: no escape to decode and short enough in code units to be short enough in code points.
    if (!escaped) {
      if (isKey) return this.onKey(frame, start + 1, end, undefined);
      if (end - start - 1 <= limits.maxStringLength) return undefined;
    }
    const value = escaped ? decodeString(text.slice(start, end + 1)) : text.slice(start + 1, end);
    // A bad escape: JSON.parse refuses the text.
    if (value === undefined) return undefined;
    if (!isKey) {
      if (value.length > limits.maxStringLength && countCodePoints(value) > limits.maxStringLength) {
        return this.refuse(
          'string-too-long',
          this.valuePath(),
          `must be at most ${limits.maxStringLength} characters long`,
        );
      }
      return escaped ? this.checkText(value, () => this.valuePath(), '') : undefined;
    }
    return this.onKey(frame, start + 1, end, escaped ? value : undefined);
  }

  /** A key of the object `frame`, inside its quotes from `start` to `end`; `name` is its decoded text if escaped. */
  private onKey(
    frame: Frame,
    start: number,
    end: number,
    name: string | undefined,
  ): UntrustedJsonError | undefined {
    const { text, limits } = this;
    if (name !== undefined || this.forbiddenShapes.has(shapeOf(text, start, end))) {
      const key = name ?? text.slice(start, end);
      if (limits.forbiddenKeys.has(key)) {
        return this.refuse('forbidden-key', joinPath(this.containerPath(), key), 'is a forbidden key');
      }
    }
    if (
      end - start > limits.maxKeyLength &&
      countCodePoints(name ?? text.slice(start, end)) > limits.maxKeyLength
    ) {
      return this.refuse(
        'key-too-long',
        this.containerPath(),
        `has a key longer than ${limits.maxKeyLength} characters`,
      );
    }
    if (name !== undefined) {
      const textProblem = this.checkText(name, () => this.containerPath(), 'has a key that ');
      if (textProblem) return textProblem;
    }
    if (this.seen(frame, start, end, name)) {
      return this.refuse(
        'duplicate-key',
        joinPath(this.containerPath(), name ?? text.slice(start, end)),
        'appears more than once',
      );
    }
    if (frame.keyCount >= limits.maxObjectKeys) {
      return this.refuse(
        'too-many-keys',
        this.containerPath(),
        `must have at most ${limits.maxObjectKeys} keys`,
      );
    }
    frame.keyCount += 1;
    frame.keyStart = start;
    frame.keyEnd = end;
    frame.keyName = name;
    frame.expectingKey = false;
    return undefined;
  }

  /**
   * Whether the object `frame` already has this key, which is then recorded: compared as text while no key of
   * the object is escaped and it has few keys, as decoded names after.
   */
  private seen(frame: Frame, start: number, end: number, name: string | undefined): boolean {
    const { text } = this;
    const { keyStarts, keyEnds } = frame;
    if (frame.keyNames === undefined) {
      if (name === undefined && frame.keyCount < LINEAR_KEY_SEARCH) {
        const length = end - start;
        for (let k = 0; k < frame.keyCount; k += 1) {
          if (keyEnds[k] - keyStarts[k] === length && sameText(text, keyStarts[k], start, length))
            return true;
        }
        keyStarts[frame.keyCount] = start;
        keyEnds[frame.keyCount] = end;
        return false;
      }
      frame.keyNames = keyStarts
        .slice(0, frame.keyCount)
        .map((keyStart, k) => text.slice(keyStart, keyEnds[k]));
    }
    const key = name ?? text.slice(start, end);
    const names = frame.keyNames;
    if (!frame.keySet && names.length >= LINEAR_KEY_SEARCH) frame.keySet = new Set(names);
    if (frame.keySet ? frame.keySet.has(key) : names.includes(key)) return true;
    names.push(key);
    frame.keySet?.add(key);
    return false;
  }

  /**
   * Refuses a number JSON.parse would read as ±Infinity, and an integer literal beyond ±(2^53 − 1). Up to 15
   * digits an integer is always safe, and without an exponent a number of up to 300 characters always finite,
   * so most numbers cost no conversion.
   */
  private onNumber(start: number): UntrustedJsonError | undefined {
    const { text } = this;
    let integer = true;
    let exponent = false;
    let end = start + 1;
    for (; end < text.length; end += 1) {
      const char = text.charCodeAt(end);
      if (char >= DIGIT_0 && char <= DIGIT_9) continue;
      if (char === DOT) {
        integer = false;
      } else if (char === LOWER_E || char === UPPER_E) {
        integer = false;
        exponent = true;
      } else if (char !== PLUS && char !== MINUS) {
        break;
      }
    }
    this.numberEnd = end;
    const digits = end - start - (text.charCodeAt(start) === MINUS ? 1 : 0);
    if (integer && digits <= MAX_ALWAYS_SAFE_DIGITS) return undefined;
    if (!integer && !exponent && end - start <= MAX_ALWAYS_FINITE_CHARS) return undefined;
    const value = Number(text.slice(start, end));
    // Not a number at all: JSON.parse refuses the text.
    if (Number.isNaN(value)) return undefined;
    if (!Number.isFinite(value)) {
      return this.refuse('number-out-of-range', this.valuePath(), 'must be a finite number');
    }
    if (integer && !Number.isSafeInteger(value)) {
      return this.refuse(
        'number-out-of-range',
        this.valuePath(),
        `must be an integer from ${-Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER} (send larger ones as strings)`,
      );
    }
    return undefined;
  }

  /** NUL and lone surrogates can only come from `\u` escapes: the text was decoded from well-formed UTF-8. `path` is built only for a refusal. */
  private checkText(value: string, path: () => string, subject: string): UntrustedJsonError | undefined {
    if (value.includes('\u0000')) {
      return this.refuse('nul-character', path(), `${subject}must not contain NUL characters (U+0000)`);
    }
    const surrogate = LONE_SURROGATE.exec(value);
    if (surrogate) {
      const code = surrogate[0].charCodeAt(0).toString(16).toUpperCase();
      return this.refuse(
        'lone-surrogate',
        path(),
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
    return this.frames.slice(0, this.depth).reduce((path, frame) => joinPath(path, this.segment(frame)), '');
  }

  /** The path of the innermost open container. */
  private containerPath(): string {
    return this.frames
      .slice(0, Math.max(0, this.depth - 1))
      .reduce((path, frame) => joinPath(path, this.segment(frame)), '');
  }

  private segment(frame: Frame): string {
    if (!frame.isObject) return String(frame.index);
    return frame.keyName ?? this.text.slice(frame.keyStart, frame.keyEnd);
  }
}

const QUOTE = 0x22;
const COLON = 0x3a;
const SPACE = 0x20;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
/** 10^15 − 1 < 2^53 − 1: an integer of 15 digits or fewer is always exact. */
const MAX_ALWAYS_SAFE_DIGITS = 15;
/** A number without exponent of this many characters stays below 10^300, far from Infinity (about 1.8e308). */
const MAX_ALWAYS_FINITE_CHARS = 300;
// In a `u` regular expression a well-formed pair is one code point, so only lone surrogates are of category Cs.
const LONE_SURROGATE = /\p{Cs}/u;
const PLAIN_KEY = /^[A-Za-z_$][\w$-]{0,63}$/;

/** A JSON string token's value, or undefined when an escape in it is malformed. */
function decodeString(token: string): string | undefined {
  try {
    return JSON.parse(token) as string;
  } catch {
    return undefined;
  }
}

/** Whether the `length` code units at `a` and at `b` are the same. */
function sameText(text: string, a: number, b: number, length: number): boolean {
  for (let k = 0; k < length; k += 1) {
    if (text.charCodeAt(a + k) !== text.charCodeAt(b + k)) return false;
  }
  return true;
}

/** Appends a key to a dotted path; a key that is not a plain name is quoted, and cut short when long. */
function joinPath(path: string, key: string): string {
  const shown = PLAIN_KEY.test(key) || /^\d+$/.test(key) ? key : JSON.stringify(excerpt(key, 32));
  return path ? `${path}.${shown}` : shown;
}

/** `text` cut to `max` code units, with an ellipsis when cut. */
export function excerpt(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
