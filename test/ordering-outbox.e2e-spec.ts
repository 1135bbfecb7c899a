import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt, IsString } from 'class-validator';
import { Consume, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({
  type: 'cart.changed',
  idempotencyKey: (m: CartChanged) => `cart:${m.cart}:${m.seq}`,
  orderingKey: (m: CartChanged) => m.cart,
})
class CartChanged {
  @IsString() cart!: string;
  @IsInt() seq!: number;
}

const QUEUE = uniqueQueue('carts');
const CARTS = ['cart-a', 'cart-b', 'cart-c', 'cart-d'];
const PER_CART = 50;

@Injectable()
class CartProjection {
  readonly seqs = new Map<string, number[]>();

  @Consume({ queue: QUEUE, ordering: { by: 'key', partitions: 2 } })
  async onChanged(event: CartChanged, ctx: MessageContext): Promise<void> {
    if (!ctx.manager) throw new Error('expected the inbox transaction');
    this.seqs.set(event.cart, [...(this.seqs.get(event.cart) ?? []), event.seq]);
  }
}

/**
 * End to end with the outbox: each change is published in the transaction that makes it, the ordering key
 * taken from the message class; the relay publishes a key's messages in commit order and the key-ordered
 * consumer handles them in that order, while the carts' transactions commit concurrently.
 */
describe('ordering: from the outbox to a key-ordered consumer', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [CartProjection],
      options: { dataSource: db.dataSource },
    });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it("handles each cart's changes in the order their transactions committed", async () => {
    await Promise.all(
      CARTS.map(async (cart) => {
        for (let seq = 1; seq <= PER_CART; seq++) {
          await db.dataSource.transaction((manager) =>
            app.publisher.publish(Object.assign(new CartChanged(), { cart, seq }), { manager }),
          );
        }
      }),
    );
    const projection = app.get(CartProjection);
    const handled = (): number => [...projection.seqs.values()].reduce((sum, seqs) => sum + seqs.length, 0);
    await waitFor(
      () => `${CARTS.length * PER_CART} changes handled (${handled()})`,
      () => handled() === CARTS.length * PER_CART,
      {
        timeoutMs: 30_000,
      },
    );

    for (const cart of CARTS) {
      expect(projection.seqs.get(cart)).toEqual(Array.from({ length: PER_CART }, (_, i) => i + 1));
    }
  });
});
