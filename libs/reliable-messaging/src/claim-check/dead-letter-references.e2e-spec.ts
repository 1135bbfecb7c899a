import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as amqp from 'amqplib';
import { DEAD_LETTER_HEADERS, HEADERS } from '../reliable-messaging.constants';
import { deadLetterQueueArguments } from '../dead-letter/dead-letter-queue';
import type { ClaimCheckStore } from '../options/claim-check.options';
import { TestBroker } from '../../../../test/support/test-broker';
import { waitFor } from '../../../../test/support/wait-for';
import { readDeadLetterReferences } from './dead-letter-references';

const DEAD_LETTERS = 5000;

/** Locates `postgres:<id>` references as the PostgreSQL store does; nothing else is asked of it by the read. */
const store = {
  locate: (reference: string) => (reference.startsWith('postgres:') ? reference.slice(9) : undefined),
} as unknown as ClaimCheckStore;

/**
 * The claim-check pruner's mark phase on a quorum dead-letter queue of 5,000 dead letters: every reference found,
 * nothing moved, and the read is not a round trip per dead letter (`basic.get` for each took 33 s for 10,000):
 * the read's channels count its `basic.get`s.
 */
describe('the claim-check references of 5,000 dead letters in a quorum dead-letter queue', () => {
  let broker: TestBroker;
  let connection: amqp.ChannelModel;
  let queue: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    connection = await amqp.connect(broker.url);
    queue = broker.name('references.dlq');
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue(queue, { durable: true, arguments: deadLetterQueueArguments('quorum') });
    for (let n = 0; n < DEAD_LETTERS; n++) {
      const reference = `postgres:body-${n}`;
      const headers =
        n % 2 === 0
          ? { [HEADERS.claimCheck]: reference }
          : { [HEADERS.claimCheck]: reference, [DEAD_LETTER_HEADERS.claimCheckCopy]: reference };
      channel.sendToQueue(queue, Buffer.from(`{"n":${n}}`), { headers });
    }
    await channel.waitForConfirms();
    await channel.close();
    await waitFor('the dead letters', async () => (await broker.queueDepth(queue)) === DEAD_LETTERS, {
      timeoutMs: 30_000,
    });
  }, 60_000);

  afterAll(async () => {
    await connection?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  it('finds every reference with a consumer, not a basic.get per dead letter, and leaves every dead letter in the queue', async () => {
    let gets = 0;
    // The read's connection, its channels' basic.get counted.
    const counted = new Proxy(connection, {
      get(target, property) {
        if (property !== 'createChannel') {
          const value = Reflect.get(target, property, target) as unknown;
          return typeof value === 'function'
            ? (value as (...args: unknown[]) => unknown).bind(target)
            : value;
        }
        return async () => {
          const channel = await target.createChannel();
          const get = channel.get.bind(channel);
          channel.get = (...args: Parameters<typeof get>) => {
            gets++;
            return get(...args);
          };
          return channel;
        };
      },
    });

    const references = await readDeadLetterReferences(counted, [queue], store);

    expect(references.size).toBe(DEAD_LETTERS);
    expect(references.has('body-0')).toBe(true);
    expect(references.has(`body-${DEAD_LETTERS - 1}`)).toBe(true);
    // One basic.get per dead letter before; now only for those past the consumer's prefetch or arriving meanwhile.
    expect(gets).toBeLessThan(10);
    await waitFor('the dead letters back', async () => (await broker.queueDepth(queue)) === DEAD_LETTERS);
  }, 60_000);
});
