import { randomUUID } from 'node:crypto';
import type { ConfirmChannel } from 'amqplib';
import type { Pool } from 'pg';

/** The order a poison message is meant for, as a producer wrote it: one item, never announced. */
const ORDER = { customerId: 'customer-poison', sku: 'BOOK-DDIA', quantity: 1, unitPriceCents: 3999 };

/** A poison message planted by {@link plantPoisonOrder}. */
export interface PlantedPoison {
  /** The order written to the database. */
  orderId: string;
  /** The order id the message names instead, which no order has. */
  wrongId: string;
  /** The message's `message_id`. */
  messageId: string;
  /** OrderPlaced's body for an order id: `body(orderId)` is the fixed message. */
  body: (orderId: string) => Buffer;
}

/**
 * Writes an order straight to the database and announces it with an OrderPlaced (confirmed by the broker)
 * whose order id is wrong, so the order saga fails with OrderNotFoundError on every attempt (retryable:
 * the order might still be on its way) until the message is dead-lettered as `attempts-exhausted`.
 */
export async function plantPoisonOrder(
  database: Pool,
  channel: ConfirmChannel,
  exchange: string,
  messageIdPrefix: string,
): Promise<PlantedPoison> {
  const orderId = randomUUID();
  const wrongId = randomUUID();
  const messageId = `${messageIdPrefix}-${randomUUID()}`;
  await database.query(
    `WITH o AS (INSERT INTO orders (id, customer_id, status, total_cents) VALUES ($1, $2, 'placed', $5) RETURNING id)
     INSERT INTO order_items (order_id, line, sku, quantity, unit_price_cents) SELECT id, 1, $3, $4, $5 FROM o`,
    [orderId, ORDER.customerId, ORDER.sku, ORDER.quantity, ORDER.unitPriceCents],
  );
  const body = (id: string) =>
    Buffer.from(
      JSON.stringify({
        orderId: id,
        customerId: ORDER.customerId,
        totalCents: ORDER.quantity * ORDER.unitPriceCents,
        itemCount: 1,
        placedAt: new Date().toISOString(),
      }),
    );
  channel.publish(exchange, 'order.placed', body(wrongId), {
    messageId,
    type: 'order.placed',
    contentType: 'application/json',
    persistent: true,
    headers: { 'rm-idempotency-key': `order-placed:${wrongId}`, 'rm-ordering-key': wrongId },
  });
  await channel.waitForConfirms();
  return { orderId, wrongId, messageId, body };
}
