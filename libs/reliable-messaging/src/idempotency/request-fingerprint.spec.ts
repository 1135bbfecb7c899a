import { describe, expect, it } from '@jest/globals';
import { canonicalJson, requestFingerprint } from './request-fingerprint';

const ORDER = { customerId: 'c-1', items: [{ sku: 'A', quantity: 1, unitPrice: 2.5 }] };

describe('requestFingerprint', () => {
  it('is the same for a body whose keys come in another order', () => {
    const reordered = { items: [{ unitPrice: 2.5, quantity: 1, sku: 'A' }], customerId: 'c-1' };
    expect(requestFingerprint({ method: 'POST', path: '/orders', body: reordered })).toBe(
      requestFingerprint({ method: 'post', path: '/orders', body: ORDER }),
    );
  });

  it.each([
    ['another body', { method: 'POST', path: '/orders', body: { ...ORDER, customerId: 'c-2' } }],
    [
      'array items in another order',
      {
        method: 'POST',
        path: '/orders',
        body: { ...ORDER, items: [...ORDER.items, ...ORDER.items].reverse() },
      },
    ],
    ['another path', { method: 'POST', path: '/orders?dry=1', body: ORDER }],
    ['another method', { method: 'PUT', path: '/orders', body: ORDER }],
    ['no body', { method: 'POST', path: '/orders', body: undefined }],
  ])('differs for %s', (_case, input) => {
    expect(requestFingerprint(input)).not.toBe(
      requestFingerprint({ method: 'POST', path: '/orders', body: ORDER }),
    );
  });

  it('is a SHA-256 in hex', () => {
    expect(requestFingerprint({ method: 'POST', path: '/orders', body: ORDER })).toMatch(/^[0-9a-f]{64}$/);
  });

  it('writes canonical JSON with sorted keys at every level and no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ y: 1, x: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[{"x":2,"y":1}]},"b":1}',
    );
  });

  describe('with a "__proto__" member', () => {
    const fingerprintOf = (body: unknown) => requestFingerprint({ method: 'POST', path: '/orders', body });

    it('tells two bodies apart whose "__proto__" members differ, as JSON.parse makes them (own data)', () => {
      const one = JSON.parse('{"__proto__":{"a":1}}') as unknown;
      const two = JSON.parse('{"__proto__":{"a":2}}') as unknown;

      expect(fingerprintOf(one)).not.toBe(fingerprintOf(two));
      expect(fingerprintOf(one)).not.toBe(fingerprintOf({}));
      expect(canonicalJson(one)).toBe('{"__proto__":{"a":1}}');
    });

    it('tells them apart when a parser set the member as the prototype, at any depth', () => {
      const withPrototype = (data: object) => Object.setPrototypeOf({ sku: 'A' }, data) as object;

      expect(fingerprintOf(withPrototype({ a: 1 }))).not.toBe(fingerprintOf(withPrototype({ a: 2 })));
      expect(fingerprintOf({ order: withPrototype({ a: 1 }) })).not.toBe(
        fingerprintOf({ order: withPrototype({ a: 2 }) }),
      );
      expect(canonicalJson(withPrototype({ a: 1 }))).toBe('{"sku":"A","__proto__":{"a":1}}');
    });

    it('leaves out the prototype of a class instance and of a null-prototype object', () => {
      class Line {
        sku = 'A';
      }
      const bare = Object.assign(Object.create(null) as object, { sku: 'A' });

      expect(canonicalJson(new Line())).toBe('{"sku":"A"}');
      expect(canonicalJson(bare)).toBe('{"sku":"A"}');
    });
  });

  it('writes what toJSON() returns, with its keys sorted, and leaves out undefined members as JSON does', () => {
    expect(canonicalJson({ at: new Date(0), gone: undefined, n: { toJSON: () => ({ b: 1, a: 2 }) } })).toBe(
      '{"at":"1970-01-01T00:00:00.000Z","n":{"a":2,"b":1}}',
    );
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
  });
});
