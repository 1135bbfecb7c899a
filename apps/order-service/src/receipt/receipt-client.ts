/** What a receipt says. Amounts are integer cents. */
export interface ReceiptRequest {
  orderId: string;
  customerId: string;
  amountCents: number;
}

/** The external service's answer. */
export interface Receipt {
  receiptId: string;
  sentAt: Date;
}

/** How one call is made. */
export interface ReceiptCallOptions {
  /** The service sends one receipt per key, however often it is called with it. */
  idempotencyKey: string;
  /** Aborts the call (the handler's deadline or shutdown). */
  signal?: AbortSignal;
}

/**
 * The external receipt service (email or print), as the app sees it. Injected by this class; the app ships
 * a fake (FakeReceiptClient) and a real deployment provides its own.
 */
export abstract class ReceiptClient {
  /** Sends a receipt; rejects with ReceiptServiceUnavailableError on a transient failure worth retrying. */
  abstract send(request: ReceiptRequest, options: ReceiptCallOptions): Promise<Receipt>;
}
