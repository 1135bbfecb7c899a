import type { Options } from 'amqplib';
import type { PoolClient } from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { OUTBOX_INSERT_MANY } from '../hand-written-schema';
import { historyPartition, ROUTING_KEYS } from './order-topology';

/** An event on its way to the outbox: its routing key, AMQP properties, JSON body and ordering key. */
export interface OrderEvent {
  routingKey: string;
  properties: Options.Publish & { messageId: string };
  body: Buffer;
  orderingKey: string;
  /** The key its consumers deduplicate on (also its `rm-idempotency-key` header). */
  idempotencyKey: string;
}

/** The message that caused an event, whose ids the event carries on. */
export interface Cause {
  messageId: string;
  correlationId: string;
}

/**
 * An event with the envelope the app's events carry (docs/envelope.md), so both services send messages of the
 * same size: message id, type, content type, app id, timestamp, correlation id when caused by another message,
 * and the idempotency key, schema version, time, causation id and ordering key as headers. Every event of an
 * order is ordered by the order's id.
 */
function orderEvent(
  type: string,
  version: string,
  routingKey: string,
  payload: { orderId: string },
  idempotencyKey: string,
  occurredAt: Date,
  cause: Cause | undefined,
  appId: string,
): OrderEvent {
  const messageId = uuidv7();
  return {
    routingKey,
    orderingKey: payload.orderId,
    idempotencyKey,
    body: Buffer.from(JSON.stringify(payload)),
    properties: {
      messageId,
      type,
      contentType: 'application/json',
      ...(cause ? { correlationId: cause.correlationId } : {}),
      appId,
      timestamp: Math.floor(occurredAt.getTime() / 1000),
      persistent: true,
      headers: {
        'rm-idempotency-key': idempotencyKey,
        'rm-schema-version': version,
        'rm-occurred-at': occurredAt.toISOString(),
        ...(cause ? { 'rm-causation-id': cause.messageId } : {}),
        'rm-ordering-key': payload.orderId,
      },
    },
  };
}

/** OrderPlaced 1.1, as the app sends it; consumers deduplicate on `order-placed:<orderId>`. */
export function orderPlaced(
  order: {
    orderId: string;
    customerId: string;
    totalCents: number;
    itemCount: number;
    placedAt: Date;
    note?: string;
  },
  appId: string,
): OrderEvent {
  const { orderId, customerId, totalCents, itemCount, placedAt, note } = order;
  const payload = { orderId, customerId, totalCents, itemCount, placedAt: placedAt.toISOString(), note };
  return orderEvent(
    'order.placed',
    '1.1',
    ROUTING_KEYS.orderPlaced,
    payload,
    `order-placed:${orderId}`,
    new Date(),
    undefined,
    appId,
  );
}

/** RequestPayment 1.0, the saga's command to the payment gateway; deduplicated on `payment-requested:<orderId>`. */
export function requestPayment(
  request: { orderId: string; customerId: string; amountCents: number },
  cause: Cause,
  appId: string,
): OrderEvent {
  return orderEvent(
    'payment.requested',
    '1.0',
    ROUTING_KEYS.paymentRequested,
    { ...request },
    `payment-requested:${request.orderId}`,
    new Date(),
    cause,
    appId,
  );
}

/** PaymentCaptured 1.0, the gateway's answer; deduplicated on `payment-captured:<orderId>`. */
export function paymentCaptured(
  captured: { orderId: string; paymentId: string; amountCents: number; capturedAt: Date },
  cause: Cause,
  appId: string,
): OrderEvent {
  const payload = { ...captured, capturedAt: captured.capturedAt.toISOString() };
  return orderEvent(
    'payment.captured',
    '1.0',
    ROUTING_KEYS.paymentCaptured,
    payload,
    `payment-captured:${captured.orderId}`,
    new Date(),
    cause,
    appId,
  );
}

/**
 * PaymentTimedOut 1.0, the timeout the saga schedules for itself when it requests the payment; deduplicated on
 * `payment-timed-out:<orderId>`.
 */
export function paymentTimedOut(orderId: string, cause: Cause, appId: string): OrderEvent {
  return orderEvent(
    'order.payment-timed-out',
    '1.0',
    ROUTING_KEYS.paymentTimedOut,
    { orderId },
    `payment-timed-out:${orderId}`,
    new Date(),
    cause,
    appId,
  );
}

/** OrderShipped 1.0, with the amount the receipt states; deduplicated on `order-shipped:<orderId>`. */
export function orderShipped(
  shipped: { orderId: string; amountCents: number; shippedAt: Date },
  cause: Cause,
  appId: string,
): OrderEvent {
  const payload = { ...shipped, shippedAt: shipped.shippedAt.toISOString() };
  return orderEvent(
    'order.shipped',
    '1.0',
    ROUTING_KEYS.orderShipped,
    payload,
    `order-shipped:${shipped.orderId}`,
    new Date(),
    cause,
    appId,
  );
}

/** OrderPaid 1.0; consumers deduplicate on `order-paid:<orderId>`. */
export function orderPaid(
  paid: { orderId: string; paymentId: string; amountCents: number; paidAt: Date },
  cause: Cause,
  appId: string,
): OrderEvent {
  const payload = { ...paid, paidAt: paid.paidAt.toISOString() };
  return orderEvent(
    'order.paid',
    '1.0',
    ROUTING_KEYS.orderPaid,
    payload,
    `order-paid:${paid.orderId}`,
    new Date(),
    cause,
    appId,
  );
}

/**
 * OrderStatusChanged 1.0: `placed` is the order's first change, `paid` its second. Routed to the activity feed
 * and to the order's history partition.
 */
export function statusChanged(
  orderId: string,
  status: 'placed' | 'paid',
  changedAt: Date,
  cause: Cause | undefined,
  appId: string,
): OrderEvent {
  const sequence = status === 'placed' ? 1 : 2;
  const payload = { orderId, status, sequence, changedAt: changedAt.toISOString() };
  const routingKey = ROUTING_KEYS.statusChanged(historyPartition(orderId));
  return orderEvent(
    'order.status-changed',
    '1.0',
    routingKey,
    payload,
    `order-status:${orderId}:${sequence}`,
    new Date(),
    cause,
    appId,
  );
}

/** Writes `events` to the outbox in the client's transaction, in one statement; the relay sends them after the commit. */
export async function writeToOutbox(
  client: PoolClient,
  exchange: string,
  events: readonly OrderEvent[],
): Promise<void> {
  await client.query({
    name: 'hw_outbox_insert_many',
    text: OUTBOX_INSERT_MANY,
    values: [
      events.map((event) => event.properties.messageId),
      events.map(() => exchange),
      events.map((event) => event.routingKey),
      events.map((event) => JSON.stringify(event.properties)),
      events.map((event) => event.body),
      events.map((event) => event.orderingKey),
    ],
  });
}
