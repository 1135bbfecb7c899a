import { describe, expect, it } from '@jest/globals';
import type { UntrustedJsonReason } from '../errors/untrusted-json.error';
import { DEFAULT_JSON_LIMITS, type JsonLimits } from '../options/json-limits.options';
import { findJsonProblem } from './json-scanner';

const LIMITS: JsonLimits = { ...DEFAULT_JSON_LIMITS, maxStringLength: 8 };

describe('findJsonProblem', () => {
  it.each<[string, string]>([
    ['an empty object and array', '{"a":{},"b":[]}'],
    ['escaped quotes and backslashes', '{"a":"\\"hi\\" \\\\","b":"\\\\"}'],
    ['a string ending in an escaped backslash', '["\\\\\\\\"]'],
    ['unicode escapes, a surrogate pair among them', '{"\\u0041":"\\u00e9\\ud83d\\ude00"}'],
    ['brackets, commas and quotes inside strings', '{"a":"[[{,\\"","b":"}]"}'],
    ['-0, 1.5e10, 1E-7 and the largest safe integers', '[-0,1.5e10,1E-7,9007199254740991,-9007199254740991]'],
    ['a float of many digits, which is not an integer literal', '[12345678901234567890.5,1e308]'],
    ['an underflow to 0', '[1e-400]'],
    ['the same key in sibling objects', '[{"a":1},{"a":2}]'],
    ['whitespace everywhere', ' { "a" : [ 1 , 2 ] , "b" : null } '],
    ['a string of exactly the limit in code points', '["😀😀😀😀😀😀😀😀"]'],
    ['an escaped string that decodes within the limit', '["\\u0061\\u0062\\u0063\\u0064\\u0065"]'],
    [
      'an object of 17 keys, past the linear search',
      JSON.stringify(Object.fromEntries([...'abcdefghijklmnopq'].map((k) => [k, 1]))),
    ],
    ['nesting at the limit', `${'['.repeat(32)}${']'.repeat(32)}`],
  ])('accepts %s', (_what, text) => {
    expect(() => JSON.parse(text) as unknown).not.toThrow();
    expect(findJsonProblem(text, LIMITS)).toBeUndefined();
  });

  it.each<[string, string, UntrustedJsonReason, string]>([
    [
      'nesting 20 000 deep',
      `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
      'too-deep',
      'nests deeper than 32 levels',
    ],
    ['objects nested 20 000 deep', `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`, 'too-deep', 'a.a.a'],
    ['1e400', '{"n":1e400}', 'number-out-of-range', 'n must be a finite number'],
    ['-1e400', '[-1e400]', 'number-out-of-range', '0 must be a finite number'],
    ['a 400-digit float', `[${'9'.repeat(400)}.0]`, 'number-out-of-range', '0 must be a finite number'],
    [
      '2^53 + 1',
      '{"id":9007199254740993}',
      'number-out-of-range',
      'id must be an integer from -9007199254740991',
    ],
    ['2^53', '{"id":9007199254740992}', 'number-out-of-range', 'id must be an integer'],
    ['-(2^53 + 1)', '{"id":-9007199254740993}', 'number-out-of-range', 'id must be an integer'],
    ['a 20-digit integer', '[99999999999999999999]', 'number-out-of-range', '0 must be an integer'],
    ['a duplicate key', '{"a":1,"b":2,"a":3}', 'duplicate-key', 'a appears more than once'],
    [
      'a duplicate key written with an escape',
      '{"k":1,"\\u006b":2}',
      'duplicate-key',
      'k appears more than once',
    ],
    [
      'a duplicate key in a large object',
      JSON.stringify(Object.fromEntries([...'abcdefghijklmnopq'].map((k) => [k, 1]))).replace('}', ',"c":2}'),
      'duplicate-key',
      'c appears more than once',
    ],
    ['__proto__', '{"__proto__":{"polluted":1}}', 'forbidden-key', '__proto__ is a forbidden key'],
    ['an escaped __proto__', '[{"\\u005f_proto__":1}]', 'forbidden-key', '0.__proto__ is a forbidden key'],
    ['constructor', '{"constructor":{"prototype":1}}', 'forbidden-key', 'constructor is a forbidden key'],
    ['a long string', '{"s":"abcdefghi"}', 'string-too-long', 's must be at most 8 characters long'],
    ['a long string of emoji', '["😀😀😀😀😀😀😀😀😀"]', 'string-too-long', '0 must be at most 8'],
    [
      'a long string written with escapes',
      '["\\u0061\\u0062\\u0063\\u0064\\u0065\\u0066\\u0067\\u0068\\u0069"]',
      'string-too-long',
      '0 must be at most 8',
    ],
    ['a long key', `{"${'k'.repeat(257)}":1}`, 'key-too-long', 'body has a key longer than 256 characters'],
    ['NUL in a string', '["a\\u0000"]', 'nul-character', '0 must not contain NUL'],
    ['a lone surrogate', '["\\ud800"]', 'lone-surrogate', '0 must be well-formed Unicode'],
    [
      'a long array',
      `[${'0,'.repeat(10_000)}0]`,
      'too-many-elements',
      'body must have at most 10000 elements',
    ],
  ])('refuses %s as %s', (_what, text, reason, message) => {
    const problem = findJsonProblem(text, LIMITS);
    expect(problem?.reason).toBe(reason);
    expect(problem?.message).toContain(message);
  });

  it('refuses a million levels at the 33rd, with a stack of its own that never grows past the limit', () => {
    const text = '['.repeat(1_000_000);
    const started = performance.now();
    expect(findJsonProblem(text, LIMITS)?.reason).toBe('too-deep');
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it.each<[string, string]>([
    ['an unclosed string', '{"a":"abc'],
    ['an unclosed string ending in a backslash', '["abc\\'],
    ['a stray closing bracket', ']]]}}{"a":1'],
    ['a comma outside any container', ',,,1,2'],
    ['a bad escape in a key', '{"\\x":1}'],
    ['a bad escape in a long string', `["${'a'.repeat(20)}\\q"]`],
    ['a number that is no number', '[1-2e+-.]'],
    ['nothing at all', ''],
  ])('leaves %s to JSON.parse to refuse, without a crash or a hang', (_what, text) => {
    expect(() => JSON.parse(text) as unknown).toThrow(SyntaxError);
    expect(() => findJsonProblem(text, LIMITS)).not.toThrow();
  });
});
