import type { DemoContext, DemoStep } from './demo-step';
import type { PlaceOrderBody } from './order-api.client';
import { runBounded } from './run-bounded';

const CATALOG = [
  { sku: 'BOOK-DDIA', unitPrice: 39.99 },
  { sku: 'MUG-RABBIT', unitPrice: 12.5 },
  { sku: 'STICKER-NEST', unitPrice: 0.99 },
  { sku: 'TEE-QUORUM', unitPrice: 24 },
  { sku: 'CABLE-USB-C', unitPrice: 7.45 },
];

/** A plausible order: one to three catalog items, quantities one to five. */
export function sampleOrder(index: number, random: () => number = Math.random): PlaceOrderBody {
  const lines = 1 + Math.floor(random() * 3);
  const items = Array.from({ length: lines }, (_, line) => {
    const product = CATALOG[(index + line * 2) % CATALOG.length];
    return { sku: product.sku, quantity: 1 + Math.floor(random() * 5), unitPrice: product.unitPrice };
  });
  return { customerId: `customer-${index % 40}`, items };
}

/** Places `count` orders through `POST /orders`, `concurrency` at a time, and records each accepted id. */
export class PlaceOrdersStep implements DemoStep {
  constructor(
    private readonly count: number,
    private readonly concurrency: number,
  ) {}

  get title(): string {
    return `${this.count} orders through POST /orders, ${this.concurrency} at a time`;
  }

  async run({ api, ledger, signal }: DemoContext): Promise<void> {
    await runBounded(
      this.count,
      this.concurrency,
      async (index) => {
        try {
          const { status, body } = await api.placeOrder(sampleOrder(index), signal);
          const id = (body as { id?: unknown } | undefined)?.id;
          if (status === 201 && typeof id === 'string') ledger.orderIds.push(id);
          else ledger.rejectedOrders.push(`order #${index + 1}: HTTP ${status} ${JSON.stringify(body)}`);
        } catch (error) {
          if (signal.aborted) return;
          ledger.rejectedOrders.push(
            `order #${index + 1}: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      },
      signal,
    );
  }
}
