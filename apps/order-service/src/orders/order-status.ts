/**
 * Where an order is in its life: placed by the customer, paid, shipped, or cancelled by its saga (the payment did
 * not come within `PAYMENT_TIMEOUT_MS`, or the order could not be shipped and its payment was refunded).
 */
export type OrderStatus = 'placed' | 'paid' | 'shipped' | 'cancelled';
