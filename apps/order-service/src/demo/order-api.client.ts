import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { OrderStats, OrderView } from '../orders/order-view';

/**
 * How long a call keeps retrying the app's 503, "the database is unavailable; try again shortly": the database for
 * a moment out of reach (restarting, or out of connections on a machine other apps share) is no reason to stop.
 */
const RETRY_UNAVAILABLE_FOR_MS = 30_000;

/** The body of `POST /orders`. */
export interface PlaceOrderBody {
  customerId: string;
  items: Array<{ sku: string; quantity: number; unitPrice: number }>;
  note?: string;
}

/**
 * The order service's HTTP API, as the demo uses it, as a careful client would: a 503 is retried for a while, and an
 * order is placed with an `Idempotency-Key`, so that its retry cannot place it twice.
 */
export class OrderApiClient {
  constructor(private readonly baseUrl: string) {}

  /** Places an order; resolves with the response's status and body. */
  async placeOrder(body: PlaceOrderBody, signal?: AbortSignal): Promise<{ status: number; body: unknown }> {
    const response = await this.fetch(
      '/orders',
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify(body),
      },
      signal,
    );
    return { status: response.status, body: await response.json().catch(() => undefined) };
  }

  /** The order, or undefined on 404. */
  async getOrder(id: string, signal?: AbortSignal): Promise<OrderView | undefined> {
    const response = await this.fetch(`/orders/${encodeURIComponent(id)}`, {}, signal);
    if (response.status === 404) return undefined;
    if (!response.ok) throw new Error(`GET /orders/${id} answered ${response.status}`);
    return (await response.json()) as OrderView;
  }

  async stats(signal?: AbortSignal): Promise<OrderStats> {
    const response = await this.fetch('/orders/stats', {}, signal);
    if (!response.ok) throw new Error(`GET /orders/stats answered ${response.status}`);
    return (await response.json()) as OrderStats;
  }

  /** The app's Prometheus metrics page (`GET /metrics`), as text. */
  async metrics(signal?: AbortSignal): Promise<string> {
    const response = await this.fetch('/metrics', {}, signal);
    if (!response.ok) throw new Error(`GET /metrics answered ${response.status}`);
    return response.text();
  }

  /** One request, sent again while it answers 503, waiting 250 ms, then twice as long each time, up to 2 s. */
  private async fetch(path: string, init: RequestInit, signal?: AbortSignal): Promise<Response> {
    const deadline = Date.now() + RETRY_UNAVAILABLE_FOR_MS;
    for (let delayMs = 250; ; delayMs = Math.min(delayMs * 2, 2_000)) {
      const response = await fetch(`${this.baseUrl}${path}`, { ...init, signal });
      if (response.status !== 503 || Date.now() + delayMs > deadline) return response;
      await response.arrayBuffer();
      await sleep(delayMs, undefined, { signal });
    }
  }
}
