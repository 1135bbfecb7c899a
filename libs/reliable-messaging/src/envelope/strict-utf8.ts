const fatalUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Text decoded from well-formed UTF-8, or the byte offset of the first ill-formed sequence. */
export type StrictUtf8Result = { ok: true; text: string } | { ok: false; offset: number };

/**
 * Decodes `bytes` as UTF-8, refusing ill-formed sequences (stray continuation bytes, overlong forms, encoded
 * surrogates, truncated sequences) instead of replacing them with U+FFFD, which would alter the sender's data
 * without telling anyone. One leading byte order mark is dropped.
 */
export function decodeStrictUtf8(bytes: Uint8Array): StrictUtf8Result {
  try {
    return { ok: true, text: fatalUtf8.decode(bytes) };
  } catch {
    return { ok: false, offset: firstIllFormedByte(bytes) };
  }
}

/**
 * The offset of the first byte that starts an ill-formed sequence, by the Unicode Standard's table of well-formed
 * UTF-8 byte sequences (table 3-7); only run once the native decoder has refused the bytes.
 */
export function firstIllFormedByte(bytes: Uint8Array): number {
  let at = 0;
  while (at < bytes.length) {
    const lead = bytes[at];
    if (lead < 0x80) {
      at += 1;
      continue;
    }
    const shape = sequenceShape(lead);
    if (!shape) return at;
    const [length, secondMin, secondMax] = shape;
    for (let next = 1; next < length; next += 1) {
      const byte = bytes[at + next];
      const [min, max] = next === 1 ? [secondMin, secondMax] : [0x80, 0xbf];
      if (byte === undefined || byte < min || byte > max) return at;
    }
    at += length;
  }
  return -1;
}

/** For a lead byte: the sequence's length and the range its second byte must fall in; undefined if it cannot lead. */
function sequenceShape(lead: number): [length: number, secondMin: number, secondMax: number] | undefined {
  if (lead >= 0xc2 && lead <= 0xdf) return [2, 0x80, 0xbf];
  if (lead === 0xe0) return [3, 0xa0, 0xbf];
  if (lead === 0xed) return [3, 0x80, 0x9f];
  if (lead >= 0xe1 && lead <= 0xef) return [3, 0x80, 0xbf];
  if (lead === 0xf0) return [4, 0x90, 0xbf];
  if (lead >= 0xf1 && lead <= 0xf3) return [4, 0x80, 0xbf];
  if (lead === 0xf4) return [4, 0x80, 0x8f];
  return undefined;
}
