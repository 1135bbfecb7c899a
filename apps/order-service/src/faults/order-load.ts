import type { OrderApiClient } from '../demo/order-api.client';
import { sampleOrder } from '../demo/place-orders.step';

/** An order the app accepted (HTTP 2xx), and when. */
export interface AcceptedOrder {
  id: string;
  /** Epoch ms of the answer. */
  at: number;
}

/** What the load did since the last {@link OrderLoad.take}. */
export interface LoadTally {
  accepted: AcceptedOrder[];
  /** Requests answered with anything but 2xx, or failing (the app down, a timeout). */
  refused: number;
  /** Requests not sent because too many were in flight already. */
  skipped: number;
}

const TICK_MS = 10;
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Steady load on `POST /orders`: an open loop at `ratePerSecond` whatever the app answers, as clients keep
 * coming during an outage, with at most `maxInFlight` requests out at once. Only orders the app answered 2xx to
 * are counted as accepted: those are the ones that must settle.
 */
export class OrderLoad {
  private tally: LoadTally = { accepted: [], refused: 0, skipped: 0 };
  private timer?: NodeJS.Timeout;
  private readonly inFlight = new Set<Promise<void>>();
  private sent = 0;
  private startedAt = 0;
  private index = 0;

  constructor(
    private readonly api: OrderApiClient,
    private readonly ratePerSecond: number,
    private readonly maxInFlight = 200,
  ) {}

  /** Orders accepted since the load was created. */
  totalAccepted = 0;

  get running(): boolean {
    return this.timer !== undefined;
  }

  start(): void {
    if (this.timer) return;
    this.startedAt = Date.now();
    this.sent = 0;
    this.timer = setInterval(() => this.tick(), TICK_MS);
  }

  /** Stops sending and waits for the requests still out. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await Promise.all([...this.inFlight]);
  }

  /** Hands over what happened since the last call, and starts a new tally. */
  take(): LoadTally {
    const tally = this.tally;
    this.tally = { accepted: [], refused: 0, skipped: 0 };
    return tally;
  }

  private tick(): void {
    const due = Math.floor(((Date.now() - this.startedAt) / 1000) * this.ratePerSecond);
    for (; this.sent < due; this.sent++) {
      if (this.inFlight.size >= this.maxInFlight) {
        this.tally.skipped++;
        continue;
      }
      const request = this.placeOne(this.index++).finally(() => this.inFlight.delete(request));
      this.inFlight.add(request);
    }
  }

  private async placeOne(index: number): Promise<void> {
    try {
      const { status, body } = await this.api.placeOrder(
        sampleOrder(index),
        AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      );
      const id = (body as { id?: unknown } | undefined)?.id;
      if (status >= 200 && status < 300 && typeof id === 'string') {
        this.tally.accepted.push({ id, at: Date.now() });
        this.totalAccepted++;
      } else this.tally.refused++;
    } catch {
      this.tally.refused++;
    }
  }
}
