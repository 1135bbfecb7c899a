import { describe, expect, it } from '@jest/globals';
import { decodeStrictUtf8, firstIllFormedByte } from './strict-utf8';

describe('decodeStrictUtf8', () => {
  it.each([
    ['ASCII', [0x7b, 0x7d], '{}'],
    ['two, three and four byte sequences', [...Buffer.from('é€😀')], 'é€😀'],
    ['the highest code point, U+10FFFF', [0xf4, 0x8f, 0xbf, 0xbf], '\u{10ffff}'],
    ['a byte order mark, which it drops', [0xef, 0xbb, 0xbf, 0x31], '1'],
  ])('decodes %s', (_what, bytes, text) => {
    expect(decodeStrictUtf8(Uint8Array.from(bytes))).toEqual({ ok: true, text });
  });

  it.each([
    ['a lone continuation byte', [0x41, 0x80], 1],
    ['0xFF, which never appears in UTF-8', [0x41, 0x42, 0xff], 2],
    ['an overlong "/" (C0 AF)', [0xc0, 0xaf], 0],
    ['an overlong three-byte form (E0 80 AF)', [0x41, 0xe0, 0x80, 0xaf], 1],
    ['an encoded surrogate (ED A0 80)', [0xed, 0xa0, 0x80], 0],
    ['a code point above U+10FFFF (F4 90 80 80)', [0xf4, 0x90, 0x80, 0x80], 0],
    ['a sequence cut short at the end', [0x41, 0xe2, 0x82], 1],
    ['a sequence cut short by ASCII', [0xe2, 0x41, 0x42], 0],
  ])('refuses %s, giving the offset of the bad sequence', (_what, bytes, offset) => {
    expect(decodeStrictUtf8(Uint8Array.from(bytes))).toEqual({ ok: false, offset });
  });
});

describe('firstIllFormedByte', () => {
  it('finds nothing in well-formed text', () => {
    expect(firstIllFormedByte(Buffer.from('Zoë — café ☕ 😀'))).toBe(-1);
  });
});
