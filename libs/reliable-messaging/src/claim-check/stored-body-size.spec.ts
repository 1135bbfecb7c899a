import { describe, expect, it } from '@jest/globals';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { readDeclaredSize } from './stored-body-size';

/** An endless stream of 1 KiB chunks that counts how many were taken, and whether it was given up. */
function endless() {
  const state = { taken: 0, closed: false };
  async function* chunks(): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        state.taken += 1;
        yield Buffer.alloc(1024, 1);
      }
    } finally {
      state.closed = true;
    }
  }
  return { state, chunks: chunks() };
}

async function* of(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield Buffer.from(part);
}

describe('readDeclaredSize', () => {
  it('reads a body of the declared size, in any chunks', async () => {
    expect((await readDeclaredSize(of('ab', 'cde', ''), 5, 's3')).toString()).toBe('abcde');
    expect((await readDeclaredSize(of(), 0, 's3')).length).toBe(0);
  });

  it('gives up an endless stream at the first byte beyond the declared size', async () => {
    const { state, chunks } = endless();

    await expect(readDeclaredSize(chunks, 10 * 1024, 's3')).rejects.toThrow(
      'claim-check-corrupt: the s3 claim-check store holds more than 10240 bytes where the message declares 10240',
    );
    expect(state.taken).toBe(11);
    expect(state.closed).toBe(true);
  });

  it('refuses a body shorter than declared', async () => {
    const error = await readDeclaredSize(of('abc'), 5, 's3').catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(InvalidMessageError);
    expect((error as InvalidMessageError).reason).toBe('claim-check-corrupt');
  });
});
