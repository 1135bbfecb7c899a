import { describe, expect, it } from '@jest/globals';
import { SagaRefusedError } from '../errors/saga-refused.error';
import { correlationKey } from './saga-correlation';

const read = (value: unknown) => correlationKey(() => value, {}, 'Saga.step');

describe('correlationKey', () => {
  it.each<[string, unknown, string]>([
    ['a string', 'order-1', 'order-1'],
    ['a string of 256 characters', 'k'.repeat(256), 'k'.repeat(256)],
    ['a safe integer, as its decimal form', 42, '42'],
    ['a string outside the BMP (a surrogate pair)', 'order-😀', 'order-😀'],
    ['"__proto__", which is only ever a query parameter', '__proto__', '__proto__'],
  ])('accepts %s', (_case, value, key) => {
    expect(read(value)).toBe(key);
  });

  it.each<[string, unknown, RegExp]>([
    ['an empty string', '', /1 to 256 characters, got 0/],
    ['a string of 257 characters', 'k'.repeat(257), /1 to 256 characters, got 257/],
    ['undefined (a property the message lacks)', undefined, /a string or a safe integer, got undefined/],
    ['null', null, /got null/],
    ['an object', { id: 1 }, /got object/],
    ['a fraction', 1.5, /got number/],
    ['an unsafe integer', 2 ** 53, /got number/],
    ['a NUL character', 'a\u0000b', /control character/],
    ['a line feed', 'a\nb', /control character/],
    ['a C1 control character', 'a\u0085b', /control character/],
    ['a lone high surrogate', 'a\ud800b', /lone surrogate/],
    ['a lone low surrogate', 'a\udc00', /lone surrogate/],
  ])('refuses %s (saga-correlation-invalid)', (_case, value, message) => {
    let error: unknown;
    try {
      read(value);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SagaRefusedError);
    expect((error as SagaRefusedError).reason).toBe('saga-correlation-invalid');
    expect((error as Error).message).toMatch(message);
  });

  it('refuses a message whose correlate throws, keeping the error as the cause', () => {
    const failure = new TypeError("Cannot read properties of undefined (reading 'id')");
    let error: unknown;
    try {
      correlationKey(
        () => {
          throw failure;
        },
        {},
        'Saga.step',
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SagaRefusedError);
    expect((error as SagaRefusedError).message).toBe(
      "saga-correlation-invalid: Saga.step: correlate threw: Cannot read properties of undefined (reading 'id')",
    );
    expect((error as SagaRefusedError).cause).toBe(failure);
  });
});
