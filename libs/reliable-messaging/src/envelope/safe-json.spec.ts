import { describe, expect, it } from '@jest/globals';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { DEFAULT_JSON_LIMITS } from '../options/json-limits.options';
import { parseJsonBody } from './safe-json';

function refusal(body: Buffer): InvalidMessageError {
  try {
    parseJsonBody(body);
  } catch (error) {
    if (error instanceof InvalidMessageError) return error;
    throw error;
  }
  throw new Error('the body was accepted');
}

describe('parseJsonBody', () => {
  it.each([
    [
      'an object',
      '{"orderId":"o-1","lines":[{"sku":"a","qty":2}]}',
      { orderId: 'o-1', lines: [{ sku: 'a', qty: 2 }] },
    ],
    ['non-ASCII text', '{"name":"Zoë — café ☕"}', { name: 'Zoë — café ☕' }],
    ['an array', '[1,2,3]', [1, 2, 3]],
    ['a bare string', '"just text"', 'just text'],
    ['"__proto__" as a value, not a key', '{"note":"__proto__"}', { note: '__proto__' }],
    [
      'numbers at the edges of the range',
      '[-0,1.5e10,9007199254740991,-9007199254740991,1e308,1e-400]',
      [-0, 1.5e10, 9007199254740991, -9007199254740991, 1e308, 0],
    ],
  ])('parses %s', (_what, text, expected) => {
    expect(parseJsonBody(Buffer.from(text, 'utf8'))).toEqual(expected);
  });

  it('accepts a UTF-8 byte order mark before the JSON', () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]);
    expect(parseJsonBody(body)).toEqual({ a: 1 });
  });

  it('strips a second byte order mark, as the decoder always has', () => {
    const mark = Buffer.from([0xef, 0xbb, 0xbf]);
    expect(parseJsonBody(Buffer.concat([mark, mark, Buffer.from('{"a":1}')]))).toEqual({ a: 1 });
  });

  it.each([
    ['a truncated object', '{"orderId": "o-1", '],
    ['single quotes', "{'a': 1}"],
    ['an empty body', ''],
    ['trailing garbage', '{"a":1} x'],
    ['NaN', '{"a":NaN}'],
  ])('refuses %s as malformed-json', (_what, text) => {
    const error = refusal(Buffer.from(text, 'utf8'));
    expect(error.reason).toBe('malformed-json');
    expect(error.message).toMatch(/^malformed-json: body is not valid JSON \(/);
  });

  it.each([
    ['a lone continuation byte', [0x7b, 0x80, 0x7d]],
    ['an invalid start byte', [0xff, 0xfe]],
    ['a truncated multi-byte sequence', [0x22, 0xe2, 0x82, 0x22]],
    ['an overlong encoding of "/"', [0x22, 0xc0, 0xaf, 0x22]],
    ['a UTF-16 surrogate encoded in UTF-8', [0x22, 0xed, 0xa0, 0x80, 0x22]],
  ])('refuses %s as invalid-utf8 instead of replacing it', (_what, bytes) => {
    const error = refusal(Buffer.from(bytes));
    expect(error.reason).toBe('invalid-utf8');
    expect(error.message).toBe('invalid-utf8: body is not valid UTF-8');
  });

  it.each([
    ['a top-level __proto__ key', '{"a":1,"__proto__":{"polluted":"yes"}}'],
    ['a nested __proto__ key', '{"a":{"b":[{"__proto__":{"polluted":"yes"}}]}}'],
    ['an escaped __proto__ key', '{"\\u005f_proto__":{"polluted":"yes"}}'],
    ['a constructor.prototype key', '{"constructor":{"prototype":{"polluted":"yes"}}}'],
    ['a nested constructor.prototype key', '{"x":{"constructor":{"prototype":{"polluted":"yes"}}}}'],
    ['an escaped constructor.prototype key', '{"\\u0063onstructor":{"prototype":{"polluted":"yes"}}}'],
    ['a "constructor" key without "prototype" under it', '{"constructor":{"name":"x"}}'],
    ['a "prototype" key not under "constructor"', '{"prototype":{"a":1}}'],
    ['a toString key, which class-transformer would skip without a word', '{"toString":1}'],
  ])('refuses %s as forbidden-key and pollutes nothing', (_what, text) => {
    const error = refusal(Buffer.from(text, 'utf8'));
    expect(error.reason).toBe('forbidden-key');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it.each([
    [
      'nesting 20 000 deep',
      `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
      'json-too-deep',
      /^json-too-deep: 0(\.0)+ nests deeper than 32 levels \(jsonLimits\.maxDepth\)$/,
    ],
    [
      '1e400',
      '{"a":1e400}',
      'json-number-out-of-range',
      /^json-number-out-of-range: a must be a finite number$/,
    ],
    [
      '2^53 + 1',
      '{"a":[9007199254740993]}',
      'json-number-out-of-range',
      /^json-number-out-of-range: a\.0 must be an integer from/,
    ],
    [
      'a duplicate key',
      '{"a":1,"a":2}',
      'json-duplicate-key',
      /^json-duplicate-key: a appears more than once$/,
    ],
    [
      'a NUL character',
      '{"a":"\\u0000"}',
      'json-nul-character',
      /^json-nul-character: a must not contain NUL/,
    ],
  ])('refuses %s with its own reason, naming the path', (_what, text, reason, message) => {
    const error = refusal(Buffer.from(text, 'utf8'));
    expect(error.reason).toBe(reason);
    expect(error.message).toMatch(message);
  });

  it('applies the limits it is given instead of the defaults', () => {
    const limits = { ...DEFAULT_JSON_LIMITS, maxDepth: 2, maxStringLength: 3 };
    expect(parseJsonBody(Buffer.from('[[1]]'), limits)).toEqual([[1]]);
    expect(() => parseJsonBody(Buffer.from('[[[1]]]'), limits)).toThrow(/json-too-deep/);
    expect(() => parseJsonBody(Buffer.from('["abcd"]'), limits)).toThrow(
      /^json-string-too-long: 0 must be at most 3 characters long \(jsonLimits\.maxStringLength\)$/,
    );
  });
});
