import { describe, expect, it } from '@jest/globals';
import type { ChannelModel, GetMessage } from 'amqplib';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { scanDeadLetters } from './dead-letter-scan';

const MIB = 2 ** 20;

/** A dead-letter queue of `sizes.length` messages with bodies of those sizes, read through a channel of its own. */
function queueOf(sizes: number[]): { model: ChannelModel; taken: () => number } {
  let next = 0;
  const channel = {
    on: () => undefined,
    checkQueue: () => Promise.resolve({ messageCount: sizes.length }),
    get: () => {
      if (next >= sizes.length) return Promise.resolve(false);
      const index = next++;
      return Promise.resolve({
        content: Buffer.alloc(sizes[index]),
        fields: { deliveryTag: index + 1 },
        properties: {
          messageId: `m-${index}`,
          headers: { [DEAD_LETTER_HEADERS.reason]: 'payload-too-large' },
        },
      } as unknown as GetMessage);
    },
    nackAll: () => undefined,
    close: () => Promise.resolve(),
  };
  return {
    model: { createChannel: () => Promise.resolve(channel) } as unknown as ChannelModel,
    taken: () => next,
  };
}

describe('scanDeadLetters', () => {
  it.each([
    ['stops once the bytes read reach the budget, and says so', [16, 16, 16, 16, 16, 16], 40, 3, true],
    ['reads one message larger than the whole budget, then stops', [100, 1], 40, 1, true],
    ['reads to the end when the budget is not reached', [1, 2, 3], 40, 3, false],
  ])('%s', async (_scenario, sizesMib, budgetMib, read, stopped) => {
    const queue = queueOf(sizesMib.map((size) => size * MIB));
    const visited: string[] = [];

    const result = await scanDeadLetters(
      queue.model,
      ['uploads.dlq'],
      {},
      1000,
      undefined,
      async (_reader, _message, deadLetter) => {
        visited.push(deadLetter.messageId!);
        return true;
      },
      budgetMib * MIB,
    );

    expect(queue.taken()).toBe(read);
    expect(visited).toHaveLength(read);
    expect(result).toMatchObject({ scanned: read, stoppedAtReadBudget: stopped, more: stopped });
    const bodies = sizesMib.slice(0, read).reduce((sum, size) => sum + size * MIB, 0);
    expect(result.readBytes).toBeGreaterThanOrEqual(bodies);
    expect(result.readBytes).toBeLessThan(bodies + 1024);
  });
});
