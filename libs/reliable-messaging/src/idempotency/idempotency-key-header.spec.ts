import { describe, expect, it } from '@jest/globals';
import { readIdempotencyKey } from './idempotency-key-header';

describe('readIdempotencyKey', () => {
  it.each([
    [
      'a quoted Structured Field string',
      ['"8e03978e-40d5-43e8-bc93-6894a57f9324"'],
      '8e03978e-40d5-43e8-bc93-6894a57f9324',
    ],
    ['a bare value', ['order-42'], 'order-42'],
    ['a quoted string with escaped quote and backslash', ['"a\\"b\\\\c"'], 'a"b\\c'],
    ['spaces inside, trimmed outside', ['  "a b"  '], 'a b'],
    ['255 characters', ['k'.repeat(255)], 'k'.repeat(255)],
  ])('takes %s', (_case, values, key) => {
    expect(readIdempotencyKey(values)).toEqual({ kind: 'key', key });
  });

  it.each([
    ['no header', undefined],
    ['an empty list', []],
  ])('reads %s as absent', (_case, values) => {
    expect(readIdempotencyKey(values)).toEqual({ kind: 'absent' });
  });

  it.each([
    ['an empty value', [''], 'Idempotency-Key must not be empty'],
    ['an empty quoted string', ['""'], 'Idempotency-Key must not be empty'],
    ['256 characters', ['k'.repeat(256)], 'Idempotency-Key must be at most 255 characters; got 256'],
    [
      'a non-ASCII character',
      ['clé'],
      'Idempotency-Key must hold printable ASCII characters only (space to ~)',
    ],
    [
      'a control character',
      ['a\tb'],
      'Idempotency-Key must hold printable ASCII characters only (space to ~)',
    ],
    ['an unterminated quote', ['"abc'], 'Idempotency-Key must be a string, quoted as'],
    ['an unknown escape', ['"a\\nb"'], 'Idempotency-Key must be a string, quoted as'],
    ['a quote inside', ['"a"b"'], 'Idempotency-Key must be a string, quoted as'],
    ['two headers', ['a', 'b'], 'Idempotency-Key must be sent once; got it more than once'],
  ])('refuses %s', (_case, values, problem) => {
    const reading = readIdempotencyKey(values);
    expect(reading.kind).toBe('invalid');
    expect(reading.kind === 'invalid' && reading.problem).toContain(problem);
  });
});
