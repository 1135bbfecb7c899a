import { describe, expect, it } from '@jest/globals';
import { SagaRefusedError } from '../errors/saga-refused.error';
import { MAX_STATE_DEPTH, serialiseState } from './saga-state';

const serialise = (state: unknown, maxBytes = 1024) => serialiseState(state, maxBytes, 'Saga.step');

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) value = { inner: value };
  return value;
}

describe('serialiseState', () => {
  it('serialises plain JSON, leaving out properties set to undefined', () => {
    expect(
      serialise({
        a: 1,
        b: 'two',
        c: [true, null, { d: 1.5 }],
        e: undefined,
        f: Object.assign(Object.create(null) as object, { g: 1 }),
      }),
    ).toBe('{"a":1,"b":"two","c":[true,null,{"d":1.5}],"f":{"g":1}}');
  });

  it('accepts a state of exactly maxBytes bytes of UTF-8 and nesting of the largest depth', () => {
    const text = serialise({ s: 'é'.repeat(10) }, 28);
    expect(Buffer.byteLength(text)).toBe(28);
    expect(() => serialise(nested(MAX_STATE_DEPTH - 1))).not.toThrow();
  });

  it.each<[string, unknown, RegExp]>([
    ['an array at the top', [1], /must be a plain object, got an array/],
    ['null at the top', null, /must be a plain object, got null/],
    ['a class instance at the top', new (class Order {})(), /got a Order/],
    ['a Date', { at: new Date(0) }, /\$\.at is a Date, not plain JSON/],
    ['a Map', { m: new Map() }, /\$\.m is a Map/],
    ['a function', { f: () => 1 }, /\$\.f is a function/],
    ['a bigint', { n: 1n }, /\$\.n is a bigint/],
    ['NaN', { n: Number.NaN }, /\$\.n is NaN/],
    ['Infinity', { list: [1, Number.POSITIVE_INFINITY] }, /\$\.list\[1\] is Infinity/],
    ['undefined in an array', { list: [undefined] }, /\$\.list\[0\] is undefined/],
    [
      'a __proto__ key',
      JSON.parse('{"a":{"__proto__":{"polluted":true}}}') as unknown,
      /\$\.a has a __proto__ key/,
    ],
    ['nesting deeper than the limit', nested(MAX_STATE_DEPTH + 1), /nests deeper than 32 levels/],
    ['more bytes than maxBytes', { s: 'é'.repeat(11) }, /30 bytes of JSON, more than maxStateBytes \(28\)/],
  ])('refuses %s (saga-state-invalid)', (_case, state, message) => {
    let error: unknown;
    try {
      serialise(state, 28);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SagaRefusedError);
    expect((error as SagaRefusedError).reason).toBe('saga-state-invalid');
    expect((error as Error).message).toMatch(message);
  });
});
