import { NonRetryableError } from 'nestjs-reliable-messaging';
import { ReceiptServiceUnavailableError } from './receipt-service-unavailable.error';
import type { Receipt, ReceiptCallOptions, ReceiptClient, ReceiptRequest } from './receipt-client';

/** The header carrying the idempotency key, as most HTTP APIs that take one name it. */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/**
 * The receipt service over HTTP: `POST <baseUrl>/receipts` with the request as JSON and the idempotency key in
 * the `Idempotency-Key` header; the service answers 2xx with `{ receiptId, sentAt }`, and sends one receipt per
 * key however often it is called. A 5xx, a 429 or a network failure is transient (retried); any other answer is
 * a bug on one side or the other, not worth retrying. The call is aborted with the handler's signal.
 */
export class HttpReceiptClient implements ReceiptClient {
  constructor(
    private readonly baseUrl: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  async send(request: ReceiptRequest, options: ReceiptCallOptions): Promise<Receipt> {
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.baseUrl}/receipts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [IDEMPOTENCY_KEY_HEADER]: options.idempotencyKey },
        body: JSON.stringify(request),
        signal: options.signal,
      });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw new ReceiptServiceUnavailableError(
        `receipt service unreachable (order ${request.orderId}): ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    const text = await response.text().catch(() => '');
    if (response.status >= 500 || response.status === 429) {
      throw new ReceiptServiceUnavailableError(
        `receipt service answered ${response.status} (order ${request.orderId}); try again`,
      );
    }
    if (!response.ok) {
      throw new NonRetryableError(
        `receipt service refused the receipt of order ${request.orderId}: ${response.status} ${text.slice(0, 200)}`,
      );
    }
    const body = parseReceipt(text);
    if (!body) {
      throw new ReceiptServiceUnavailableError(
        `receipt service answered ${response.status} without a receipt (order ${request.orderId})`,
      );
    }
    return body;
  }
}

function parseReceipt(text: string): Receipt | undefined {
  try {
    const body = JSON.parse(text) as { receiptId?: unknown; sentAt?: unknown };
    if (typeof body.receiptId !== 'string' || typeof body.sentAt !== 'string') return undefined;
    const sentAt = new Date(body.sentAt);
    return Number.isNaN(sentAt.getTime()) ? undefined : { receiptId: body.receiptId, sentAt };
  } catch {
    return undefined;
  }
}
