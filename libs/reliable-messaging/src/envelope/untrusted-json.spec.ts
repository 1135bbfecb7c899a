import { describe, expect, it, jest } from '@jest/globals';
import { UntrustedJsonError, type UntrustedJsonReason } from '../errors/untrusted-json.error';
import { parseUntrustedJson, type JsonLimits } from './untrusted-json';

const TIGHT: Partial<JsonLimits> = { maxDepth: 3, maxArrayLength: 3, maxObjectKeys: 3, maxKeyLength: 8 };

function refusal(body: string | Buffer, limits: Partial<JsonLimits> = TIGHT): UntrustedJsonError {
  try {
    parseUntrustedJson(typeof body === 'string' ? Buffer.from(body) : body, limits);
  } catch (error) {
    if (error instanceof UntrustedJsonError) return error;
    throw error;
  }
  throw new Error('the body was accepted');
}

describe('parseUntrustedJson', () => {
  it.each([
    ['an object at the limits', '{"a":[1,2,{"b":"x"}],"c":"\\\\u0000","d":"😀\\ud83d\\ude00"}'],
    ['a bare string', '"text"'],
    ['a string holding brackets, commas and escaped quotes', '{"a":"[[[{,,,\\"}"}'],
    ['"__proto__" as a value', '{"a":"__proto__"}'],
    ['the same key in different objects', '{"a":{"a":1},"b":{"a":1}}'],
  ])('parses %s as JSON.parse does', (_what, text) => {
    expect(parseUntrustedJson(Buffer.from(text), TIGHT)).toEqual(JSON.parse(text));
  });

  it.each<[string, string | Buffer, UntrustedJsonReason, string]>([
    [
      'invalid UTF-8',
      Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
      'invalid-utf8',
      'body is not valid UTF-8: ill-formed byte sequence at byte 6',
    ],
    ['malformed JSON', '{"a":', 'malformed-json', 'body is not valid JSON: '],
    ['nesting past the limit', '{"a":[{"b":[1]}]}', 'too-deep', 'a.0.b nests deeper than 3 levels'],
    [
      'a depth bomb',
      '['.repeat(100_000) + ']'.repeat(100_000),
      'too-deep',
      '0.0.0 nests deeper than 3 levels',
    ],
    ['a long array', '{"a":[1,2,3,4]}', 'too-many-elements', 'a must have at most 3 elements'],
    ['a long array at the root', '[1,2,3,4]', 'too-many-elements', 'body must have at most 3 elements'],
    ['too many keys', '{"a":1,"b":2,"c":3,"d":4}', 'too-many-keys', 'body must have at most 3 keys'],
    ['a long key', '{"a":{"abcdefghi":1}}', 'key-too-long', 'a has a key longer than 8 characters'],
    ['a top-level __proto__', '{"__proto__":{"x":1}}', 'forbidden-key', '__proto__ is a forbidden key'],
    [
      'an escaped __proto__',
      '{"a":[{"\\u005f_proto__":1}]}',
      'forbidden-key',
      'a.0.__proto__ is a forbidden key',
    ],
    ['a constructor key', '{"a":{"constructor":1}}', 'forbidden-key', 'a.constructor is a forbidden key'],
    ['a prototype key', '{"prototype":1}', 'forbidden-key', 'prototype is a forbidden key'],
    ['a toString key', '{"toString":1}', 'forbidden-key', 'toString is a forbidden key'],
    ['a duplicate key', '{"a":1,"b":2,"a":3}', 'duplicate-key', 'a appears more than once'],
    [
      'a duplicate key written with an escape',
      '{"a":{"k":1,"\\u006b":2}}',
      'duplicate-key',
      'a.k appears more than once',
    ],
    [
      'NUL in a value',
      '{"a":["x","y\\u0000"]}',
      'nul-character',
      'a.1 must not contain NUL characters (U+0000)',
    ],
    [
      'NUL in a key',
      '{"a":{"k\\u0000":1}}',
      'nul-character',
      'a has a key that must not contain NUL characters',
    ],
    [
      'a lone high surrogate',
      '{"a":"x\\ud800"}',
      'lone-surrogate',
      'a must be well-formed Unicode, without a lone surrogate (U+D800)',
    ],
    [
      'a lone low surrogate',
      '"\\udc00x"',
      'lone-surrogate',
      'body must be well-formed Unicode, without a lone surrogate (U+DC00)',
    ],
    [
      'surrogates in the wrong order',
      '{"a":"\\ude00\\ud83d"}',
      'lone-surrogate',
      'a must be well-formed Unicode',
    ],
  ])('refuses %s as %s, naming the path', (_what, body, reason, message) => {
    const error = refusal(body);
    expect(error.reason).toBe(reason);
    expect(error.message.startsWith(message)).toBe(true);
  });

  it('quotes an odd key in the path, cut short', () => {
    const key = 'a.b '.repeat(20);
    const error = refusal(`{"${key}":{"x":"\\u0000"}}`, { maxKeyLength: 100 });
    expect(error.path).toBe(`${JSON.stringify(`${key.slice(0, 32)}…`)}.x`);
  });

  it('quotes no more than a short excerpt of a malformed body', () => {
    const error = refusal(`{"a":"${'x'.repeat(10_000)}" oops}`);
    expect(error.message.length).toBeLessThan(200);
  });

  it('refuses a key of 9 code points over a limit of 8, and takes one of 8 emoji', () => {
    expect(refusal(`{"${'😀'.repeat(9)}":1}`).reason).toBe('key-too-long');
    expect(parseUntrustedJson(Buffer.from(`{"${'😀'.repeat(8)}":1}`), TIGHT)).toEqual({
      ['😀'.repeat(8)]: 1,
    });
  });

  it('pollutes no prototype', () => {
    refusal('{"__proto__":{"polluted":"yes"}}');
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('uses generous defaults when given no limits', () => {
    expect(
      parseUntrustedJson(Buffer.from(JSON.stringify({ a: Array.from({ length: 5000 }, () => 1) }))),
    ).toEqual({
      a: Array.from({ length: 5000 }, () => 1),
    });
    expect(refusal('['.repeat(33) + ']'.repeat(33), {}).reason).toBe('too-deep');
  });

  it('checks the limits before JSON.parse builds anything from the body', () => {
    const parse = jest.spyOn(JSON, 'parse');
    try {
      expect(refusal(`${'['.repeat(20_000)}${']'.repeat(20_000)}`, {}).reason).toBe('too-deep');
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });

  it.each<[string, string, string]>([
    ['1e400', '{"a":1e400}', 'a must be a finite number'],
    ['2^53 + 1', '{"a":9007199254740993}', 'a must be an integer from -9007199254740991 to 9007199254740991'],
  ])('refuses %s, which JSON.parse would alter, as number-out-of-range', (_what, text, message) => {
    const error = refusal(text, {});
    expect(error.reason).toBe('number-out-of-range');
    expect(error.message.startsWith(message)).toBe(true);
  });
});
