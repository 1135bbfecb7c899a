import { createHash } from 'node:crypto';
import type { ChannelModel } from 'amqplib';

/** Partitions of the order history: each order's status changes in order, four orders at once, as in the app. */
export const HISTORY_PARTITIONS = 4;

/** The routing keys the service publishes with; a status change's names its history partition. */
export const ROUTING_KEYS = {
  orderPlaced: 'order.placed',
  paymentRequested: 'payment.requested',
  paymentCaptured: 'payment.captured',
  paymentTimedOut: 'order.payment-timed-out',
  orderPaid: 'order.paid',
  orderShipped: 'order.shipped',
  statusChanged: (partition: number): string => `order.status-changed.p${partition}`,
};

/** One consumer's queue: what it is bound to and how many deliveries it takes at once. */
export interface ConsumerQueue {
  queue: string;
  bindings: string[];
  /** Deliveries unacknowledged at once, which is also transactions at once. */
  prefetch: number;
  /** Single active consumer: one subscriber at a time across replicas, for the ordered consumers. */
  ordered: boolean;
}

/** The hand-written order service's exchanges and queues, under a namespace, named as the app names its own. */
export interface OrderFlowNames {
  exchange: string;
  deadLetterExchange: string;
  /** The order saga's step on OrderPlaced, which starts an order's instance. */
  sagaPlaced: ConsumerQueue;
  /** The payment gateway, on RequestPayment. */
  payment: ConsumerQueue;
  /** The order saga's step on PaymentCaptured. */
  sagaPaymentCaptured: ConsumerQueue;
  /** Shipping, on OrderPaid. */
  shipping: ConsumerQueue;
  /** The order saga's step on OrderShipped, which completes the instance. */
  sagaShipped: ConsumerQueue;
  /** The receipt, on OrderShipped. */
  receipt: ConsumerQueue;
  history: ConsumerQueue[];
  activity: ConsumerQueue;
}

/**
 * The names and consumer settings: the app's (apps/order-service), so the broker does the same work for both.
 * The saga's steps on OrderPlaced, PaymentCaptured and OrderShipped take 10, 5 and 5 at once, the payment gateway
 * 8, shipping 5 and the receipt 10; the history is ordered by order over
 * HISTORY_PARTITIONS single-active-consumer queues and the activity feed by queue, each one message at a time.
 */
export function orderFlowNames(namespace: string): OrderFlowNames {
  const queue = (name: string, bindings: string[], prefetch: number, ordered = false): ConsumerQueue => ({
    queue: `${namespace}.${name}`,
    bindings,
    prefetch,
    ordered,
  });
  const history = Array.from({ length: HISTORY_PARTITIONS }, (_, partition) =>
    queue(
      `history.order-status-changed.p${String(partition).padStart(3, '0')}`,
      [ROUTING_KEYS.statusChanged(partition)],
      1,
      true,
    ),
  );
  return {
    exchange: `${namespace}.events`,
    deadLetterExchange: `${namespace}.events.dead-letter`,
    sagaPlaced: queue('order-saga.order-placed', [ROUTING_KEYS.orderPlaced], 10),
    payment: queue('payment.payment-requested', [ROUTING_KEYS.paymentRequested], 8),
    sagaPaymentCaptured: queue('order-saga.payment-captured', [ROUTING_KEYS.paymentCaptured], 5),
    shipping: queue('shipping.order-paid', [ROUTING_KEYS.orderPaid], 5),
    sagaShipped: queue('order-saga.order-shipped', [ROUTING_KEYS.orderShipped], 5),
    receipt: queue('receipt.order-shipped', [ROUTING_KEYS.orderShipped], 10),
    history,
    activity: queue('activity.order-status-changed', ['order.status-changed.*'], 1, true),
  };
}

/** Every consumer's queue of the service. */
export function orderFlowQueues(names: OrderFlowNames): ConsumerQueue[] {
  return [
    names.sagaPlaced,
    names.payment,
    names.sagaPaymentCaptured,
    names.shipping,
    names.sagaShipped,
    names.receipt,
    ...names.history,
    names.activity,
  ];
}

/** Every queue of the service, dead-letter queues included, and its exchanges: what a cleanup deletes. */
export function orderFlowBrokerNames(names: OrderFlowNames): string[] {
  const queues = orderFlowQueues(names);
  return [
    ...queues.flatMap(({ queue }) => [queue, `${queue}.dlq`]),
    names.exchange,
    names.deadLetterExchange,
  ];
}

/** The history partition of an order: the first byte of SHA-256 over its id, modulo the partitions. */
export function historyPartition(orderId: string): number {
  return createHash('sha256').update(orderId).digest()[0] % HISTORY_PARTITIONS;
}

/**
 * Declares the exchanges and queues with the arguments the app's queues get from the module: quorum, dead-lettered
 * at least once to `<queue>.dlq` through the dead-letter exchange (which needs reject-publish overflow), and a
 * delivery limit of 20 as the backstop against a message that crashes its consumer every time.
 */
export async function declareOrderFlow(connection: ChannelModel, names: OrderFlowNames): Promise<void> {
  const channel = await connection.createChannel();
  try {
    await channel.assertExchange(names.exchange, 'topic', { durable: true });
    await channel.assertExchange(names.deadLetterExchange, 'direct', { durable: true });
    for (const consumer of orderFlowQueues(names)) {
      const deadLetters = `${consumer.queue}.dlq`;
      await channel.assertQueue(deadLetters, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
      await channel.bindQueue(deadLetters, names.deadLetterExchange, consumer.queue);
      await channel.assertQueue(consumer.queue, {
        durable: true,
        arguments: {
          'x-queue-type': 'quorum',
          'x-dead-letter-exchange': names.deadLetterExchange,
          'x-dead-letter-routing-key': consumer.queue,
          'x-delivery-limit': 20,
          'x-dead-letter-strategy': 'at-least-once',
          'x-overflow': 'reject-publish',
          ...(consumer.ordered ? { 'x-single-active-consumer': true } : {}),
        },
      });
      for (const key of consumer.bindings) await channel.bindQueue(consumer.queue, names.exchange, key);
    }
  } finally {
    await channel.close();
  }
}
