import type { OrderStats, OrderView } from '../orders/order-view';

/** The body of `POST /orders`. */
export interface PlaceOrderBody {
  customerId: string;
  items: Array<{ sku: string; quantity: number; unitPrice: number }>;
  note?: string;
}

/** The order service's HTTP API, as the demo uses it. */
export class OrderApiClient {
  constructor(private readonly baseUrl: string) {}

  /** Places an order; resolves with the response's status and body. */
  async placeOrder(body: PlaceOrderBody, signal?: AbortSignal): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${this.baseUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
    return { status: response.status, body: await response.json().catch(() => undefined) };
  }

  /** The order, or undefined on 404. */
  async getOrder(id: string, signal?: AbortSignal): Promise<OrderView | undefined> {
    const response = await fetch(`${this.baseUrl}/orders/${encodeURIComponent(id)}`, { signal });
    if (response.status === 404) return undefined;
    if (!response.ok) throw new Error(`GET /orders/${id} answered ${response.status}`);
    return (await response.json()) as OrderView;
  }

  async stats(signal?: AbortSignal): Promise<OrderStats> {
    const response = await fetch(`${this.baseUrl}/orders/stats`, { signal });
    if (!response.ok) throw new Error(`GET /orders/stats answered ${response.status}`);
    return (await response.json()) as OrderStats;
  }

  /** The app's Prometheus metrics page (`GET /metrics`), as text. */
  async metrics(signal?: AbortSignal): Promise<string> {
    const response = await fetch(`${this.baseUrl}/metrics`, { signal });
    if (!response.ok) throw new Error(`GET /metrics answered ${response.status}`);
    return response.text();
  }
}
