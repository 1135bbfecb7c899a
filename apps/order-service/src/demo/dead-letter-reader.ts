import type { ChannelModel } from 'amqplib';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';

/** A message found in a dead-letter queue, with the reason the module recorded. */
export interface DeadLetterSeen {
  queue: string;
  messageId?: string;
  reason: string;
  errorMessage: string;
}

/**
 * Reads every message of the given dead-letter queues without removing them: each is taken unacknowledged and
 * handed back when the channel is closed, so the dead letters stay for inspection and replay.
 */
export async function readDeadLetters(
  model: ChannelModel,
  queues: readonly string[],
): Promise<DeadLetterSeen[]> {
  const channel = await model.createChannel();
  // NOTE: amqplib throws an unhandled channel 'error' (say, a queue that does not exist) on the connection.
  channel.on('error', () => undefined);
  const seen: DeadLetterSeen[] = [];
  try {
    for (const queue of queues) {
      for (;;) {
        const message = await channel.get(queue, { noAck: false });
        if (message === false) break;
        const headers = (message.properties.headers ?? {}) as Record<string, unknown>;
        seen.push({
          queue,
          messageId:
            typeof message.properties.messageId === 'string' ? message.properties.messageId : undefined,
          reason: textHeader(headers, DEAD_LETTER_HEADERS.reason) ?? 'unknown',
          errorMessage: textHeader(headers, DEAD_LETTER_HEADERS.errorMessage) ?? '',
        });
      }
    }
  } finally {
    // Closing the channel returns every unacknowledged message to its queue.
    await channel.close().catch(() => undefined);
  }
  return seen;
}

/** How many messages wait in each queue, summed. */
export async function countMessages(model: ChannelModel, queues: readonly string[]): Promise<number> {
  const channel = await model.createChannel();
  channel.on('error', () => undefined);
  try {
    let total = 0;
    for (const queue of queues) total += (await channel.checkQueue(queue)).messageCount;
    return total;
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** A header the module writes as text; amqplib hands a long string back as a string, a byte array as a Buffer. */
function textHeader(headers: Record<string, unknown>, name: string): string | undefined {
  const value = headers[name];
  if (typeof value === 'string') return value;
  return Buffer.isBuffer(value) ? value.toString('utf8') : undefined;
}
