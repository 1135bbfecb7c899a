import fc from 'fast-check';

/**
 * Generators of what a publisher, an HTTP client or a form can send: text of every kind, bytes that are not
 * UTF-8, JSON that nests, repeats keys or names prototypes, header values of every type amqplib decodes (and
 * some it does not), so each parser meets the shapes it was written for and all the others.
 */

/** Names that reach or shadow a prototype member when used as a key. */
export const PROTOTYPE_KEYS: readonly string[] = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
];

/** Text known to upset parsers: empty, blank, control characters, NUL, lone surrogates, a BOM, long runs. */
export const NASTY_STRINGS: readonly string[] = [
  '',
  ' ',
  '\t\r\n',
  '\u0000',
  'a\u0000b',
  '\uD800',
  '\uDFFF',
  '\uD83D\uDE00',
  '\uFEFF',
  '\uFEFF{}',
  '"',
  '\\',
  '"\\"',
  '%00',
  '%ZZ',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '-0',
  '1e400',
  '9007199254740993',
  '0x10',
  ' 1 ',
  '2026-02-30T25:61:61Z',
  '+275760-09-13T00:00:00.001Z',
  '2026-05-01',
  '9999999999999999999999w',
  '30m',
  '0s',
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  'a'.repeat(255),
  'a'.repeat(256),
  'a'.repeat(257),
  'x'.repeat(70_000),
  '\u00e9'.repeat(200),
  '\uD83D\uDE00'.repeat(200),
  ...PROTOTYPE_KEYS,
];

/** Any text: short and long, ASCII and not, with the known-nasty strings mixed in. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 200, maxLength: 600 }) },
  { weight: 1, arbitrary: fc.stringMatching(/^\d{1,25}[smhdw]?$/) },
  { weight: 1, arbitrary: fc.date({ noInvalidDate: false }).map(isoOrInvalid) },
);

function isoOrInvalid(date: Date): string {
  return Number.isNaN(date.getTime()) ? 'Invalid Date' : date.toISOString();
}

/** Numbers JavaScript and JSON disagree about, or that overflow an integer column. */
export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    -0,
    2 ** 53,
    2 ** 53 + 2,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    1e21,
    -1,
    0,
    10_001,
  ),
);

/** Object keys: ordinary names, prototype members and odd text. */
export const hostileKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom(...PROTOTYPE_KEYS) },
  { weight: 1, arbitrary: fc.constantFrom(...NASTY_STRINGS.filter((text) => text.length < 300)) },
);

/** An AMQP timestamp as amqplib decodes one, with a value of any type. */
export const amqpTimestamp: fc.Arbitrary<Record<string, unknown>> = fc
  .record({
    '!': fc.constant('timestamp'),
    value: fc.oneof(
      hostileNumber,
      hostileString,
      fc.constant(null),
      hostileString.map((text) => Buffer.from(text)),
    ),
  })
  .map(ownProperties);

/** A header value of any type a broker delivers or a forger could make amqplib deliver, nested a few levels. */
export const hostileHeaderValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 5, arbitrary: hostileString },
    { weight: 2, arbitrary: hostileString.map((text) => Buffer.from(text, 'utf8')) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)) },
    { weight: 2, arbitrary: hostileNumber },
    { weight: 1, arbitrary: fc.bigInt() },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constantFrom(null, undefined) },
    { weight: 1, arbitrary: amqpTimestamp },
    { weight: 1, arbitrary: fc.date({ noInvalidDate: false }) },
    { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.dictionary(hostileKey, tie('value'), { maxKeys: 4 }).map(ownProperties) },
  ),
})).value;

/**
 * A header table: the names a parser reads (given) with values of any type, plus keys of its own, some
 * prototype members among them; built with own properties only, as amqplib builds headers.
 */
export function hostileHeaders(names: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  const known = fc.dictionary(fc.constantFrom(...names), hostileHeaderValue, { maxKeys: names.length });
  const other = fc.dictionary(hostileKey, hostileHeaderValue, { maxKeys: 3 });
  return fc.tuple(known, other).map(([own, extra]) => ownProperties({ ...extra, ...own }));
}

/** A copy made of own, enumerable data properties only, `__proto__` included as a plain key. */
export function ownProperties(source: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(source)) {
    Object.defineProperty(copy, key, {
      value: source[key],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/** JSON text nested `depth` levels deep, in objects, arrays or both. */
export function nestedJson(depth: number, kind: 'object' | 'array' | 'mixed', leaf = '1'): string {
  let open = '';
  let close = '';
  for (let level = 0; level < depth; level += 1) {
    const object = kind === 'object' || (kind === 'mixed' && level % 2 === 0);
    open += object ? '{"a":' : '[';
    close = (object ? '}' : ']') + close;
  }
  return open + leaf + close;
}

/** Valid JSON text from fast-check's generator, as ordinary producers write it (a few levels at most). */
export const ordinaryJsonText: fc.Arbitrary<string> = fc.json({ maxDepth: 4 });

/**
 * JSON text meant to hurt: prototype keys (plain or escaped), duplicate keys, numbers beyond a double or
 * beyond 2^53, escapes for NUL and lone surrogates, a BOM, and nesting from a few levels to thousands.
 */
export const hostileJsonText: fc.Arbitrary<string> = hostileJsonTextUpTo(5_000);

/** hostileJsonText with nesting up to `maxDepth` levels. */
export function hostileJsonTextUpTo(maxDepth: number): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: ordinaryJsonText },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom(...PROTOTYPE_KEYS), ordinaryJsonText, fc.boolean())
        .map(([key, value, escaped]) => `{"${escaped ? escapeAll(key) : key}":${value}}`),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.string({ maxLength: 8 }), ordinaryJsonText, ordinaryJsonText)
        .map(([key, a, b]) => `{${JSON.stringify(key)}:${a},${JSON.stringify(key)}:${b}}`),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '1e400',
        '-1e400',
        '9007199254740993',
        '123456789012345678901234567890',
        '{"n":1e309}',
        '[0.1e-400]',
        '"\\u0000"',
        '"\\ud800"',
        '{"\\ud800":1}',
        '\uFEFF{"a":1}',
        '{"a":1,}',
        '{"a" 1}',
        "{'a':1}",
        '[1,2',
        '',
        ' ',
      ),
    },
    { weight: 1, arbitrary: fc.integer({ min: 2, max: 40 }).map((depth) => nestedJson(depth, 'mixed')) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.integer({ min: Math.min(100, maxDepth), max: maxDepth }),
          fc.constantFrom<'object' | 'array' | 'mixed'>('object', 'array', 'mixed'),
        )
        .map(([depth, kind]) => nestedJson(depth, kind)),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
  );
}

/** Every character as a `\u` escape, as a forger hides a key from a plain-text search. */
function escapeAll(text: string): string {
  return [...text].map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
}

/** A body: JSON text as UTF-8, or with a byte broken, or any bytes at all. */
export const hostileBody: fc.Arbitrary<Buffer> = hostileBodyUpTo(5_000);

/** hostileBody with JSON nested up to `maxDepth` levels. */
export function hostileBodyUpTo(maxDepth: number): fc.Arbitrary<Buffer> {
  const hostileJsonText = hostileJsonTextUpTo(maxDepth);
  return fc.oneof(
    { weight: 5, arbitrary: hostileJsonText.map((text) => Buffer.from(text, 'utf8')) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(hostileJsonText, fc.nat(), fc.constantFrom(0x80, 0xc0, 0xc1, 0xed, 0xf5, 0xff))
        .map(([text, at, byte]) => {
          const bytes = Buffer.from(text, 'utf8');
          if (bytes.length === 0) return Buffer.from([byte]);
          bytes[at % bytes.length] = byte;
          return bytes;
        }),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 256 }).map((bytes) => Buffer.from(bytes)) },
  );
}
