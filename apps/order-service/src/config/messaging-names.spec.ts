import { describe, expect, it } from '@jest/globals';
import { messagingNames } from './messaging-names';

describe('messagingNames', () => {
  it('uses plain names without a namespace', () => {
    expect(messagingNames()).toEqual({
      connectionName: 'order-service',
      exchange: 'events',
      deadLetterExchange: 'events.dead-letter',
      queues: {
        sagaPlaced: 'order-saga.order-placed',
        sagaPaymentCaptured: 'order-saga.payment-captured',
        sagaPaymentTimedOut: 'order-saga.payment-timed-out',
        sagaShipped: 'order-saga.order-shipped',
        sagaShipmentFailed: 'order-saga.shipment-failed',
        sagaPaymentRefunded: 'order-saga.payment-refunded',
        payment: 'payment.payment-requested',
        refund: 'payment.refund-requested',
        paymentVoid: 'payment.order-cancelled',
        shipping: 'shipping.order-paid',
        receipt: 'receipt.order-shipped',
        history: 'history.order-status-changed',
        activity: 'activity.order-status-changed',
      },
    });
    expect(messagingNames('')).toEqual(messagingNames());
  });

  it('puts every name under the namespace', () => {
    const names = messagingNames('demo-1a2b');
    const all = [names.exchange, names.deadLetterExchange, ...Object.values(names.queues)];
    expect(all.every((name) => name.startsWith('demo-1a2b.'))).toBe(true);
    expect(names.queues.payment).toBe('demo-1a2b.payment.payment-requested');
    expect(names.connectionName).toBe('order-service.demo-1a2b');
  });

  it.each(['-leading-dash', 'has space', 'a'.repeat(65), 'amq/slash'])(
    'refuses the namespace %p',
    (namespace) => {
      expect(() => messagingNames(namespace)).toThrow('MESSAGING_NAMESPACE must be 1 to 64 letters');
    },
  );
});
