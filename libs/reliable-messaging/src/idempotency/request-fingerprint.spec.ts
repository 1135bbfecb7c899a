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
});
