import { InvalidMessageError } from '../errors/invalid-message.error';

/**
 * The refusal of a stored body whose size is not the one its message declares. Stores throw it before they read
 * a byte of the body when the store tells the size up front, and while reading when more or fewer bytes arrive.
 */
export function sizeMismatch(
  store: string,
  stored: number | string,
  declared: number,
  unread = true,
): InvalidMessageError {
  return new InvalidMessageError(
    'claim-check-corrupt',
    `the ${store} claim-check store holds ${stored} bytes where the message declares ${declared}` +
      (unread ? '; the body was not read' : ''),
  );
}

/**
 * Reads a body of exactly `declared` bytes from a stream, and no more: a buffer of that size is the only
 * allocation, and the stream is given up as soon as one byte more arrives (an object that grew after its size was
 * checked, or a server that gave no size or a wrong one). The `for await` loop destroys the stream when it stops
 * early.
 */
export async function readDeclaredSize(
  chunks: AsyncIterable<Uint8Array>,
  declared: number,
  store: string,
): Promise<Buffer> {
  const body = Buffer.allocUnsafe(declared);
  let received = 0;
  for await (const chunk of chunks) {
    if (received + chunk.length > declared)
      throw sizeMismatch(store, `more than ${declared}`, declared, false);
    body.set(chunk, received);
    received += chunk.length;
  }
  if (received !== declared) throw sizeMismatch(store, received, declared, false);
  return body;
}
