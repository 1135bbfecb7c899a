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
 * nothing moved, and the read is not a round trip per dead letter (it took 33 s for 10,000 with `basic.get`).
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

  it('finds every reference in under 3 s and leaves every dead letter in the queue', async () => {
    const started = performance.now();
    const references = await readDeadLetterReferences(connection, [queue], store);
    const elapsedMs = performance.now() - started;

    expect(references.size).toBe(DEAD_LETTERS);
    expect(references.has('body-0')).toBe(true);
    expect(references.has(`body-${DEAD_LETTERS - 1}`)).toBe(true);
    expect(elapsedMs).toBeLessThan(3000);
    await waitFor('the dead letters back', async () => (await broker.queueDepth(queue)) === DEAD_LETTERS);
  }, 60_000);
});
