import { SILENT_CUSTOMER_ID } from '../payment/payment-gateway.consumer';
import { UNDELIVERABLE_CUSTOMER_ID } from '../shipping/shipping.consumer';
import type { OrderView } from '../orders/order-view';
import type { DemoContext, DemoStep } from './demo-step';
import { sampleOrder } from './place-orders.step';
import { pollUntil } from './poll-until';

/** The payment timeout the demo starts the app with: short, so the cancellation shows within the run. */
export const DEMO_PAYMENT_TIMEOUT_MS = 8_000;

/** How long the step waits for each order's saga to end. */
const WAIT_MS = 60_000;

/** One of the two orders and how its saga must end. */
interface Expected {
  label: string;
  customerId: string;
  cancelReason: 'payment-timeout' | 'shipment-failed';
  /** Charges and refunds the payments ledger must hold for it at the end. */
  charges: number;
  refunds: number;
}

const EXPECTED: Expected[] = [
  {
    label: 'never paid',
    customerId: SILENT_CUSTOMER_ID,
    cancelReason: 'payment-timeout',
    charges: 0,
    refunds: 0,
  },
  {
    label: 'undeliverable',
    customerId: UNDELIVERABLE_CUSTOMER_ID,
    cancelReason: 'shipment-failed',
    charges: 1,
    refunds: 1,
  },
];

/**
 * The order saga's two ways out, one order each: a customer the payment gateway never answers (the saga's
 * payment timeout cancels the order and publishes OrderCancelled) and a customer shipping cannot deliver to
 * (paid, then the compensation: the payment refunded and the order cancelled). Both are read back through
 * `GET /orders/:id`, which shows the saga's stage, its history and its pending timeouts.
 */
export class SagaOutcomesStep implements DemoStep {
  readonly appEnv = { PAYMENT_TIMEOUT_MS: String(DEMO_PAYMENT_TIMEOUT_MS) };

  get title(): string {
    return (
      `one order for '${SILENT_CUSTOMER_ID}' (the gateway never answers: cancelled after the ` +
      `${DEMO_PAYMENT_TIMEOUT_MS / 1000} s payment timeout) and one for '${UNDELIVERABLE_CUSTOMER_ID}' ` +
      '(paid, not shippable: refunded and cancelled)'
    );
  }

  async run({ api, database, ledger, signal }: DemoContext): Promise<void> {
    const results = await Promise.all(
      EXPECTED.map(async (expected) => {
        const { status, body } = await api.placeOrder(
          { ...sampleOrder(1), customerId: expected.customerId },
          signal,
        );
        const id = (body as { id?: unknown } | undefined)?.id;
        if (status !== 201 || typeof id !== 'string') {
          ledger.rejectedOrders.push(`the ${expected.label} order: HTTP ${status} ${JSON.stringify(body)}`);
          return undefined;
        }
        const ended = await pollUntil(
          async () => {
            const order = await api.getOrder(id, signal);
            return order?.saga?.status === 'completed' ? order : undefined;
          },
          WAIT_MS,
          signal,
        );
        return { expected, id, ended: ended ?? (await api.getOrder(id).catch(() => undefined)) };
      }),
    );
    ledger.checks.push({
      name: 'order saga',
      verify: async () => {
        const summaries: string[] = [];
        const problems: string[] = [];
        for (const result of results) {
          if (!result) continue;
          const { expected, id, ended } = result;
          const { rows } = await database.query<{ charges: number; refunds: number }>(
            `SELECT (SELECT count(*)::int FROM payments WHERE order_id = $1) AS charges,
                    (SELECT count(*)::int FROM refunds WHERE order_id = $1) AS refunds`,
            [id],
          );
          const { charges, refunds } = rows[0];
          summaries.push(`${expected.label}: ${describe(ended)}, ${charges} charge(s), ${refunds} refund(s)`);
          if (ended?.status !== 'cancelled' || ended.cancelReason !== expected.cancelReason) {
            problems.push(
              `the ${expected.label} order ${id} is ${describe(ended)}, expected cancelled (${expected.cancelReason})`,
            );
          }
          if (ended?.saga?.status !== 'completed' || ended.saga.pendingTimeouts.length > 0) {
            problems.push(`the ${expected.label} order's saga did not complete with no timeout pending`);
          }
          if (charges !== expected.charges || refunds !== expected.refunds) {
            problems.push(
              `the ${expected.label} order has ${charges} charge(s) and ${refunds} refund(s), expected ` +
                `${expected.charges} and ${expected.refunds}`,
            );
          }
        }
        return {
          summary: summaries.join('; '),
          problem: problems.length > 0 ? problems.join('; ') : undefined,
        };
      },
    });
  }
}

function describe(order: OrderView | undefined): string {
  if (!order) return 'missing';
  const saga = order.saga
    ? `saga ${order.saga.status} at '${order.saga.stage}' after ${order.saga.version} step(s)`
    : 'no saga';
  return `${order.status}${order.cancelReason ? ` (${order.cancelReason})` : ''}, ${saga}`;
}
