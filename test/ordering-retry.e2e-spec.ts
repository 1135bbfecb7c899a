import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt, IsString } from 'class-validator';
import { Consume, type MessageContext, MessageType } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({
  type: 'ledger.entry',
  idempotencyKey: (m: Entry) => `entry:${m.account}:${m.seq}`,
  orderingKey: (m: Entry) => m.account,
})
class Entry {
  @IsString() account!: string;
  @IsInt() seq!: number;
}

const QUEUE = uniqueQueue('ledger');
const MAX_ATTEMPTS = 3;
/** Account `a` fails twice on this entry, then succeeds; account `b` never gets past its entry 2. */
const FLAKY = 'a:3';
const POISON = 'b:2';

interface Attempt {
  entry: string;
  attempt: number;
  deliveryTag: number;
  consumerTag: string;
}

@Injectable()
class LedgerHandler {
  readonly attempts: Attempt[] = [];
  readonly applied: string[] = [];

  @Consume({
    queue: QUEUE,
    ordering: { by: 'key', partitions: 2 },
    retry: { maxAttempts: MAX_ATTEMPTS, initialDelayMs: 100, maxDelayMs: 200 },
  })
  async onEntry(entry: Entry, ctx: MessageContext): Promise<void> {
    const id = `${entry.account}:${entry.seq}`;
    const { deliveryTag, consumerTag } = ctx.raw.fields;
    this.attempts.push({ entry: id, attempt: ctx.attempt, deliveryTag, consumerTag });
    if (id === FLAKY && ctx.attempt < MAX_ATTEMPTS) throw new Error(`ledger busy (attempt ${ctx.attempt})`);
    if (id === POISON) throw new Error('entry 2 of b never applies');
    this.applied.push(id);
  }

  attemptsOf(id: string): Attempt[] {
    return this.attempts.filter((a) => a.entry === id);
  }
}

/**
 * An ordered consumer retries in place: a failing message keeps its place at the head of its partition, and the
 * next messages of its key wait until it succeeds or is dead-lettered. A delayed retry would send it around
 * the delay levels and let them pass.
 */
describe('ordering: retries keep the order of a key', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: LedgerHandler;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, { providers: [LedgerHandler] });
    handler = app.get(LedgerHandler);
    for (let seq = 1; seq <= 6; seq++) {
      for (const account of ['a', 'b']) {
        await app.publisher.publish(Object.assign(new Entry(), { account, seq }));
      }
    }
    await waitFor(
      () => `a's 6 entries and b's 5 applicable ones (applied ${handler.applied.join(', ')})`,
      () => handler.applied.length === 11,
      { timeoutMs: 20_000 },
    );
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  it('retries a failed message in place, as the same delivery, before the next message of its key', () => {
    const flaky = handler.attemptsOf(FLAKY);
    expect(flaky.map((a) => a.attempt)).toEqual([1, 2, 3]);
    expect(new Set(flaky.map((a) => `${a.consumerTag}/${a.deliveryTag}`)).size).toBe(1);
    expect(handler.applied.filter((id) => id.startsWith('a:'))).toEqual([
      'a:1',
      'a:2',
      'a:3',
      'a:4',
      'a:5',
      'a:6',
    ]);
    const order = handler.attempts.map((a) => a.entry);
    expect(order.indexOf('a:4')).toBeGreaterThan(order.lastIndexOf(FLAKY));
  });

  it('dead-letters a message once its attempts are spent, and only then lets the next ones of its key through', async () => {
    expect(handler.attemptsOf(POISON).map((a) => a.attempt)).toEqual([1, 2, 3]);
    expect(handler.applied.filter((id) => id.startsWith('b:'))).toEqual(['b:1', 'b:3', 'b:4', 'b:5', 'b:6']);
    const order = handler.attempts.map((a) => a.entry);
    expect(order.indexOf('b:3')).toBeGreaterThan(order.lastIndexOf(POISON));

    const deadLetters = [
      ...(await broker.getAll(`${QUEUE}.p000.dlq`)),
      ...(await broker.getAll(`${QUEUE}.p001.dlq`)),
    ];
    expect(deadLetters).toHaveLength(1);
    expect(JSON.parse(deadLetters[0].content.toString())).toEqual({ account: 'b', seq: 2 });
    expect(deadLetters[0].properties.headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
      [DEAD_LETTER_HEADERS.attempts]: MAX_ATTEMPTS,
    });
  });
});
