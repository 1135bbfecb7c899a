/**
 * A message names an order this service does not have. Retryable: without an outbox the event can overtake
 * the commit of the order it describes, so the order may simply not be visible yet.
 */
export class OrderNotFoundError extends Error {
  override readonly name = 'OrderNotFoundError';
  constructor(readonly orderId: string) {
    super(`order ${orderId} not found`);
  }
}
