import { describe, expect, it } from '@jest/globals';
import { AuthFailureLimiter } from './auth-failure-limiter';

describe('AuthFailureLimiter', () => {
  it('holds an address off after its refusals fill the window, until the oldest leaves it, and no other address', () => {
    let clock = 0;
    const limiter = new AuthFailureLimiter(3, 60_000, () => clock);
    for (const at of [0, 10_000, 20_000]) {
      clock = at;
      expect(limiter.retryAfterSeconds('a')).toBeUndefined();
      limiter.refused('a');
    }
    expect(limiter.retryAfterSeconds('a')).toBe(40);
    expect(limiter.retryAfterSeconds('b')).toBeUndefined();
    clock = 60_000;
    expect(limiter.retryAfterSeconds('a')).toBeUndefined();
    limiter.refused('a');
    expect(limiter.retryAfterSeconds('a')).toBe(10);
  });
});
