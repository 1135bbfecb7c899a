/**
 * OrderPaid arrived for an order whose payment is not visible yet (the event overtook the commit). Retryable:
 * shipping re-reads the order on the next attempt.
 */
export class OrderNotPaidYetError extends Error {
  override readonly name = 'OrderNotPaidYetError';
  constructor(readonly orderId: string) {
    super(`order ${orderId} is not paid yet`);
  }
}
