import { describe, it } from '@jest/globals';
import fc from 'fast-check';
import { InvalidMessageError } from '../../libs/reliable-messaging/src/errors/invalid-message.error';
import { UntrustedJsonError } from '../../libs/reliable-messaging/src/errors/untrusted-json.error';
import { parseJsonBody } from '../../libs/reliable-messaging/src/envelope/safe-json';
import { decodeStrictUtf8 } from '../../libs/reliable-messaging/src/envelope/strict-utf8';
import { parseUntrustedJson } from '../../libs/reliable-messaging/src/envelope/untrusted-json';
import { HOSTILE_BODIES } from './corpus/hostile-inputs';
import { expectWellFormed, fuzz, FUZZ_TIMEOUT_MS, refusedBy } from './support/fuzz-harness';
import { hostileBody, nestedJson } from './support/hostile-arbitraries';

/** The strict UTF-8 decoder and the two JSON parsers every body from outside goes through first. */

const CORPUS = HOSTILE_BODIES.filter((entry) => !entry.finding).map((entry) => entry.body);
const TOO_DEEP = HOSTILE_BODIES.filter((entry) => entry.finding === 'depth').map((entry) => entry.body);

/** The deepest nesting an accepted value of parseUntrustedJson may have (its default maxDepth). */
const UNTRUSTED_MAX_DEPTH = 32;

describe('fuzz: JSON bodies', () => {
  it(
    'decodeStrictUtf8 never throws: it returns the text, which encodes back to the same bytes, or the offset of a bad byte',
    async () => {
      await fuzz(
        {
          name: 'decodeStrictUtf8',
          run: (body: Buffer) => {
            const decoded = decodeStrictUtf8(body);
            if (!decoded.ok) {
              expectWellFormed(
                Number.isInteger(decoded.offset) && decoded.offset >= 0 && decoded.offset < body.length,
                `offset ${decoded.offset} is not a byte of a ${body.length}-byte body`,
              );
              return { kind: 'refused', reason: `ill-formed at byte ${decoded.offset}` };
            }
            const bom = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
            expectWellFormed(
              Buffer.from(decoded.text, 'utf8').equals(body.subarray(bom)),
              'the decoded text does not encode back to the body',
            );
            return { kind: 'accepted', value: decoded.text };
          },
        },
        fc.oneof(
          hostileBody,
          fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
        ),
        CORPUS,
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'parseJsonBody accepts a value without prototype keys or refuses with an InvalidMessageError naming its reason',
    async () => {
      await fuzz(
        {
          name: 'parseJsonBody',
          run: (body: Buffer) => {
            const outcome = refusedBy(
              InvalidMessageError,
              () => parseJsonBody(body),
              (error) => error.reason,
            );
            if (outcome.kind === 'accepted') {
              const key = prototypeKeyIn(outcome.value);
              expectWellFormed(key === undefined, `an accepted body holds the key '${key}'`);
            }
            return outcome;
          },
        },
        hostileBody,
        CORPUS,
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'parseUntrustedJson accepts a value within its limits or refuses with an UntrustedJsonError naming its reason',
    async () => {
      await fuzz(
        {
          name: 'parseUntrustedJson',
          run: (body: Buffer) => {
            const outcome = refusedBy(
              UntrustedJsonError,
              () => parseUntrustedJson(body),
              (error) => error.reason,
            );
            if (outcome.kind === 'accepted') {
              const depth = depthOf(outcome.value);
              expectWellFormed(depth <= UNTRUSTED_MAX_DEPTH, `an accepted body nests ${depth} levels`);
              const key = prototypeKeyIn(outcome.value, true);
              expectWellFormed(key === undefined, `an accepted body holds the key '${key}'`);
            }
            return outcome;
          },
        },
        hostileBody,
        CORPUS,
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  /*
   * The JSON limits on every path (issue: deep JSON on the consume path): these state what must hold once
   * parseJsonBody applies the same limits as parseUntrustedJson and both refuse numbers a double cannot hold.
   * Each held only once the JSON limits landed (finding 6); the inputs its name gives were accepted before.
   */
  it(
    'parseJsonBody refuses a body nested 20,000 deep',
    async () => {
      await fuzz(
        {
          name: 'parseJsonBody depth',
          run: (body: Buffer) => mustRefuse(InvalidMessageError, body, parseJsonBody),
        },
        fc
          .tuple(
            fc.integer({ min: 1_000, max: 20_000 }),
            fc.constantFrom<'object' | 'array' | 'mixed'>('object', 'array', 'mixed'),
          )
          .map(([depth, kind]) => Buffer.from(nestedJson(depth, kind))),
        TOO_DEEP,
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'parseJsonBody refuses a number a double cannot hold (1e400, 2^53 + 1)',
    async () => {
      await fuzz(
        {
          name: 'parseJsonBody numbers',
          run: (body: Buffer) => mustRefuse(InvalidMessageError, body, parseJsonBody),
        },
        unsafeNumberBody,
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'parseJsonBody refuses a duplicate key (the last one used to win)',
    async () => {
      await fuzz(
        {
          name: 'parseJsonBody duplicates',
          run: (body: Buffer) => mustRefuse(InvalidMessageError, body, parseJsonBody),
        },
        fc
          .tuple(fc.stringMatching(/^[a-z]{1,8}$/), fc.integer(), fc.integer())
          .map(([key, a, b]) => Buffer.from(`{"${key}":${a},"${key}":${b}}`)),
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'parseUntrustedJson refuses a number a double cannot hold (1e400, 2^53 + 1)',
    async () => {
      await fuzz(
        {
          name: 'parseUntrustedJson numbers',
          run: (body: Buffer) => mustRefuse(UntrustedJsonError, body, parseUntrustedJson),
        },
        unsafeNumberBody,
      );
    },
    FUZZ_TIMEOUT_MS,
  );
});

/** A body holding one number beyond a double's range or beyond 2^53, at the top or inside an object or array. */
const unsafeNumberBody: fc.Arbitrary<Buffer> = fc
  .tuple(
    fc.oneof(
      fc.integer({ min: 309, max: 100_000 }).map((exponent) => `1e${exponent}`),
      fc.integer({ min: 309, max: 100_000 }).map((exponent) => `-2.5E+${exponent}`),
      fc.bigInt({ min: 2n ** 53n + 1n, max: 2n ** 128n }).map(String),
      fc.bigInt({ min: -(2n ** 128n), max: -(2n ** 53n) - 1n }).map(String),
    ),
    fc.constantFrom('%', '{"amount":%}', '[1,%]'),
  )
  .map(([number, shape]) => Buffer.from(shape.replace('%', number)));

function mustRefuse<E extends Error>(
  refusal: abstract new (...args: never[]) => E,
  body: Buffer,
  parse: (body: Buffer) => unknown,
) {
  const outcome = refusedBy(refusal, () => parse(body));
  expectWellFormed(outcome.kind === 'refused', `accepted ${body.subarray(0, 60).toString()}…`);
  return outcome;
}

/** The nesting depth of a parsed value (the outermost array or object counting 1), without recursion. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    deepest = Math.max(deepest, depth);
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/**
 * The first `__proto__` own key in a parsed value, or `constructor` holding a `prototype` (what
 * secure-json-parse refuses); with `strict`, any key that names an Object.prototype member or `prototype`.
 */
function prototypeKeyIn(value: unknown, strict = false): string | undefined {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current !== 'object' || current === null) continue;
    for (const key of Object.keys(current)) {
      const child = (current as Record<string, unknown>)[key];
      if (key === '__proto__') return key;
      if (key === 'constructor' && typeof child === 'object' && child !== null && 'prototype' in child)
        return key;
      if (strict && (key === 'prototype' || Object.prototype.hasOwnProperty.call(Object.prototype, key)))
        return key;
      stack.push(child);
    }
  }
  return undefined;
}
