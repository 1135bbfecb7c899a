import type { DeadLetter } from 'nestjs-reliable-messaging/operations';

/**
 * A dead letter as a list or a count keeps it: its headers and properties and the size of its body, never the
 * body. A list's memory then grows with its length, not with what publishers put in the bodies.
 */
export type DeadLetterSummary = Omit<DeadLetter, 'body' | 'fullBody'> & {
  /** The size of the body as it sits in the dead-letter queue, in bytes. */
  bodyBytes: number;
};

/** The dead letter without its body, which the caller then lets go. */
export function summarizeDeadLetter(deadLetter: DeadLetter): DeadLetterSummary {
  const { body, fullBody: _fullBody, ...rest } = deadLetter;
  return { ...rest, bodyBytes: body.length };
}

/**
 * Roughly what a message's headers take in memory: the bytes of their strings and Buffers and 8 for any other
 * value, keys included. A publisher writes them, and the broker bounds them only by its frame size.
 */
export function headerBytes(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Buffer.isBuffer(value)) return value.length;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + headerBytes(item), 8);
  if (typeof value === 'object' && value !== null) {
    let sum = 8;
    for (const [key, inner] of Object.entries(value)) sum += key.length + headerBytes(inner);
    return sum;
  }
  return 8;
}
