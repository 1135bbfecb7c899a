import { describe, expect, it } from '@jest/globals';
import { uuidv7 } from './uuid-v7';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The 48-bit Unix milliseconds an id carries. */
function timestampOf(id: string): number {
  return parseInt(id.replace(/-/g, '').slice(0, 12), 16);
}

describe('uuidv7', () => {
  it('sets version 7 and the RFC 9562 variant on every id', () => {
    for (let n = 0; n < 10_000; n++) expect(uuidv7()).toMatch(UUID_V7);
  });

  it('carries the Unix milliseconds it was made at', () => {
    const before = Date.now();
    const id = uuidv7();
    expect(timestampOf(id)).toBeGreaterThanOrEqual(before);
    expect(timestampOf(id)).toBeLessThanOrEqual(Date.now());
    expect(timestampOf(uuidv7(Date.UTC(2040, 0, 1)))).toBe(Date.UTC(2040, 0, 1));
  });

  it('makes strictly increasing ids within one millisecond', () => {
    const at = Date.UTC(2041, 0, 1);
    const ids = Array.from({ length: 50_000 }, () => uuidv7(at));
    for (let n = 1; n < ids.length; n++) expect(ids[n] > ids[n - 1]).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('stays in order when the clock steps back, keeping the later timestamp', () => {
    const later = uuidv7(Date.UTC(2042, 0, 1, 0, 0, 1));
    const afterStepBack = uuidv7(Date.UTC(2042, 0, 1));
    expect(afterStepBack > later).toBe(true);
    expect(timestampOf(afterStepBack)).toBe(Date.UTC(2042, 0, 1, 0, 0, 1));
  });

  it('makes different ids across milliseconds, ordered by time', () => {
    const first = uuidv7(Date.UTC(2043, 0, 1));
    const second = uuidv7(Date.UTC(2043, 0, 1) + 1);
    expect(second > first).toBe(true);
    expect(timestampOf(second) - timestampOf(first)).toBe(1);
  });
});
