import type { Channel, ChannelModel, Message } from 'amqplib';
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
 * module's copy mark), for the pruner's mark phase. Each queue is read without moving anything, on a channel of
 * this read's own: a consumer whose prefetch covers the queue's depth takes its messages unacknowledged (up to
 * 65,535, the most a prefetch can say), `basic.get` the rest and those arriving meanwhile, then
 * `basic.nack(requeue)` returns all it took, in order. Only headers are kept, never a body. A queue that does not exist holds nothing. Throws when
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
      const keep = (message: Message): void => {
        const headers = message.properties.headers ?? {};
        for (const name of [HEADERS.claimCheck, DEAD_LETTER_HEADERS.claimCheckCopy]) {
          const reference = text(headers[name]);
          const location = reference === undefined ? undefined : store.locate(reference);
          if (location !== undefined) locations.add(location);
        }
      };
      let taken = await takeByConsumer(channel, queue, Math.min(depth, MAX_PREFETCH), keep);
      for (; taken < depth + READ_SLACK; taken++) {
        const message = await channel.get(queue, { noAck: false });
        if (message === false) break;
        keep(message);
      }
      read += taken;
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

/** The largest prefetch AMQP 0-9-1 can express (a short). */
const MAX_PREFETCH = 65_535;

/** How long the consumer waits for its next delivery before it leaves the rest to `basic.get`. */
const DELIVERY_GAP_MS = 1000;

/**
 * Takes up to `count` messages of `queue` with a consumer whose prefetch is `count`, holding them unacknowledged
 * like `basic.get` does, and hands each to `keep`; resolves with how many it took once it has `count`, or once no
 * delivery came for DELIVERY_GAP_MS (another reader took some meanwhile), after cancelling the consumer.
 *
 * NOTE: `basic.get` is a round trip per message, 1 to 3 ms each on a quorum queue, so a mark of 10,000 dead letters
 * took 33 s and held up every delete of its round (the scale suite's claim-check case); the broker streams a
 * consumer's deliveries, up to its prefetch, in a fraction of that. The prefetch must cover every message taken,
 * since none is acknowledged: an unlimited one (0) is capped by quorum queues (at 2,000 here).
 */
async function takeByConsumer(
  channel: Channel,
  queue: string,
  count: number,
  keep: (message: Message) => void,
): Promise<number> {
  if (count === 0) return 0;
  await channel.prefetch(count);
  let taken = 0;
  let arrived = (): void => undefined;
  const { consumerTag } = await channel.consume(
    queue,
    (message) => {
      if (message === null) return;
      taken++;
      keep(message);
      arrived();
    },
    { noAck: false },
  );
  try {
    while (taken < count) {
      const before = taken;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, DELIVERY_GAP_MS);
        arrived = () => {
          if (taken >= count || taken - before >= 100) {
            clearTimeout(timer);
            resolve();
          }
        };
      });
      if (taken === before) break;
    }
  } finally {
    arrived = () => undefined;
    // NOTE: deliveries sent before the cancel arrive before its reply, and are counted by then.
    await channel.cancel(consumerTag);
  }
  return taken;
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
