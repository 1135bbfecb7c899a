/** The exchange and queues of the order service, optionally under a namespace. */
export interface MessagingNames {
  /** The broker connection's name: `order-service`, or `order-service.<namespace>`. */
  connectionName: string;
  /** The events exchange: `events`, or `<namespace>.events`. */
  exchange: string;
  /** The dead-letter exchange: `<exchange>.dead-letter`. */
  deadLetterExchange: string;
  queues: {
    /** The order saga's queue of OrderPlaced, which starts an instance. */
    sagaPlaced: string;
    /** The order saga's queue of PaymentCaptured. */
    sagaPaymentCaptured: string;
    /** The order saga's queue of its own payment timeouts. */
    sagaPaymentTimedOut: string;
    /** The order saga's queue of OrderShipped. */
    sagaShipped: string;
    /** The order saga's queue of ShipmentFailed. */
    sagaShipmentFailed: string;
    /** The order saga's queue of PaymentRefunded. */
    sagaPaymentRefunded: string;
    /** The payment gateway's queue of RequestPayment. */
    payment: string;
    /** The payment gateway's queue of RefundPayment. */
    refund: string;
    /** The payment gateway's queue of OrderCancelled, on which it voids the order's payment. */
    paymentVoid: string;
    /** Shipping's queue of OrderPaid. */
    shipping: string;
    /** Receipt's queue of OrderShipped. */
    receipt: string;
    /** The order history's queue of OrderStatusChanged, ordered by key: its partitions are `<queue>.p000`, ... */
    history: string;
    /** The activity feed's queue of OrderStatusChanged, ordered by queue (a single active consumer). */
    activity: string;
  };
}

const NAMESPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * The broker names for a namespace. Without one the app uses `events` and plain queue names; with one every
 * name starts with `<namespace>.`, so several copies of the app (demo runs, test runs) share a broker without
 * consuming each other's messages.
 */
export function messagingNames(namespace?: string): MessagingNames {
  if (namespace !== undefined && namespace !== '' && !NAMESPACE_PATTERN.test(namespace)) {
    throw new Error(
      `MESSAGING_NAMESPACE must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit; got '${namespace}'`,
    );
  }
  const prefix = namespace ? `${namespace}.` : '';
  return {
    connectionName: namespace ? `order-service.${namespace}` : 'order-service',
    exchange: `${prefix}events`,
    deadLetterExchange: `${prefix}events.dead-letter`,
    queues: {
      sagaPlaced: `${prefix}order-saga.order-placed`,
      sagaPaymentCaptured: `${prefix}order-saga.payment-captured`,
      sagaPaymentTimedOut: `${prefix}order-saga.payment-timed-out`,
      sagaShipped: `${prefix}order-saga.order-shipped`,
      sagaShipmentFailed: `${prefix}order-saga.shipment-failed`,
      sagaPaymentRefunded: `${prefix}order-saga.payment-refunded`,
      payment: `${prefix}payment.payment-requested`,
      refund: `${prefix}payment.refund-requested`,
      paymentVoid: `${prefix}payment.order-cancelled`,
      shipping: `${prefix}shipping.order-paid`,
      receipt: `${prefix}receipt.order-shipped`,
      history: `${prefix}history.order-status-changed`,
      activity: `${prefix}activity.order-status-changed`,
    },
  };
}

/**
 * The queues this process consumes. NOTE: `@Consume()` options are fixed when the consumer classes load, so the
 * namespace is read from the environment here, once, rather than from the injected configuration.
 */
export const QUEUES = messagingNames(process.env.MESSAGING_NAMESPACE).queues;
