import { describe, expect, it } from '@jest/globals';
import { countCodePoints } from './code-points';

describe('countCodePoints', () => {
  it.each([
    ['an empty string', '', 0],
    ['ASCII', 'abc', 3],
    ['an emoji, two UTF-16 code units', '😀', 1],
    ['a heart with a variation selector, which @MaxLength does not count', '❤️', 2],
    ['a family emoji joined by ZWJs', '👨‍👩‍👧', 5],
    ['a lone high surrogate', '\ud800', 1],
    ['a lone low surrogate after a pair', '😀\udc00', 2],
  ])('counts %s', (_what, text, count) => {
    expect(countCodePoints(text)).toBe(count);
  });
});
