import type { Channel, ChannelModel } from 'amqplib';
import { DEAD_LETTER_HEADERS, HEADERS } from '../reliable-messaging.constants';
import type { ClaimCheckStore } from '../options/claim-check.options';
import { describeQueueError } from '../dead-letter/dead-letter-queue';

/** The most dead letters one mark phase reads, over all queues; past it the round deletes nothing. */
export const MARK_BUDGET_MESSAGES = 100_000;

/**
 * How many messages past the depth measured at the start a queue's read may take: dead letters arriving meanwhile
 * are read too, and cannot make the read endless.
 */
const READ_SLACK = 1000;

/**
 * The store locations every dead letter in `deadLetterQueues` refers to (its `rm-claim-check` reference, and the
 * module's copy mark), for the pruner's mark phase. Each queue is read without moving anything, as the tools read
 * it: `basic.get` with manual acknowledgement on a channel of this read's own, then `basic.nack(requeue)` of all
 * it took, in order. Only headers are kept, never a body. A queue that does not exist holds nothing. Throws when
 * a read fails or the queues hold more than `budget` messages: a partial set of references must never decide
 * what is deleted.
 *
 * A dead letter another reader holds at that moment (a tool's scan, the monitor's peek) is not ready, so it is
 * not seen; such reads last seconds, and only a body that expires during one is at risk.
 */
export async function readDeadLetterReferences(
  model: ChannelModel,
  deadLetterQueues: readonly string[],
  store: ClaimCheckStore,
  budget = MARK_BUDGET_MESSAGES,
): Promise<Set<string>> {
  const locations = new Set<string>();
  let read = 0;
  for (const queue of deadLetterQueues) {
    const channel = await model.createChannel();
    // NOTE: a passive declare of a missing queue closes the channel with 404; unhandled, amqplib would rethrow
    // that 'error' event on the connection.
    channel.on('error', () => undefined);
    try {
      const depth = await depthOf(channel, queue);
      if (depth === undefined) continue;
      if (read + depth > budget) {
        throw new Error(
          `the dead-letter queues hold more than ${budget} messages; expired bodies are kept this round`,
        );
      }
      for (let taken = 0; taken < depth + READ_SLACK; taken++) {
        const message = await channel.get(queue, { noAck: false });
        if (message === false) break;
        read++;
        const headers = message.properties.headers ?? {};
        for (const name of [HEADERS.claimCheck, DEAD_LETTER_HEADERS.claimCheckCopy]) {
          const reference = text(headers[name]);
          const location = reference === undefined ? undefined : store.locate(reference);
          if (location !== undefined) locations.add(location);
        }
      }
      channel.nackAll(true);
    } catch (error) {
      throw new Error(`cannot read the claim-check references in '${queue}': ${describeQueueError(error)}`, {
        cause: error,
      });
    } finally {
      // NOTE: closing the channel also returns whatever it still held, should the nack not have been sent.
      await channel.close().catch(() => undefined);
    }
  }
  return locations;
}

/** Ready messages in `queue`; undefined when it does not exist (the app never declared it: no dead letters). */
async function depthOf(channel: Channel, queue: string): Promise<number | undefined> {
  try {
    return (await channel.checkQueue(queue)).messageCount;
  } catch (error) {
    if (/NOT_FOUND|404/.test(String((error as Error)?.message))) return undefined;
    throw error;
  }
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}
