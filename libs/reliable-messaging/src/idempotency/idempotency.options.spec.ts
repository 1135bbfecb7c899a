import { describe, expect, it } from '@jest/globals';
import { defaultIdentifyCaller } from './caller-identity';
import { resolveIdempotencyOptions } from './idempotency.options';

describe('resolveIdempotencyOptions', () => {
  it('defaults to keys kept 24 hours, a 10 s wait for a duplicate in flight, pruning every minute, callers told apart by defaultIdentifyCaller', () => {
    expect(resolveIdempotencyOptions(undefined)).toEqual({
      ttlMs: 86_400_000,
      lockTimeoutMs: 10_000,
      pruneIntervalMs: 60_000,
      prune: true,
      identifyCaller: defaultIdentifyCaller,
    });
  });

  it.each([
    [{ ttlMs: 500 }, "'idempotency.ttlMs' must be an integer from 1000"],
    [{ lockTimeoutMs: 0 }, "'idempotency.lockTimeoutMs' must be an integer from 1 to 600000"],
    [{ pruneIntervalMs: 1.5 }, "'idempotency.pruneIntervalMs' must be an integer from 1000"],
    [{ prune: 'yes' as unknown as boolean }, "IdempotencyModule: 'prune' must be true or false"],
    [
      { identifyCaller: 'user' as unknown as () => string },
      "IdempotencyModule: 'identifyCaller' must be a function like (request) => request.user?.accountId",
    ],
  ])('refuses %p', (options, message) => {
    expect(() => resolveIdempotencyOptions(options)).toThrow(message);
  });
});
