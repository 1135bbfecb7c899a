import { ChildApp } from './child-app';

/** The compiled order service; ORDER_SERVICE_DIST names another build output than dist/. */
export const ORDER_SERVICE_MAIN = `${process.env.ORDER_SERVICE_DIST ?? 'dist'}/apps/order-service/src/main.js`;

/** The order service's queues under `namespace`, each followed by its dead-letter queue: what a spec tracks. */
export function orderServiceQueues(namespace: string): string[] {
  return ['payment.order-placed', 'shipping.order-paid', 'receipt.order-paid'].flatMap((queue) => [
    `${namespace}.${queue}`,
    `${namespace}.${queue}.dlq`,
  ]);
}

/** Where the order service runs: its own database, broker and namespace, and any other variables. */
export interface OrderServiceSetup {
  databaseUrl: string;
  amqpUrl: string;
  namespace: string;
  /** More variables, or ones to override: `NO_COLOR=1`, `PORT=0` and a 5 ms receipt latency are the defaults. */
  env?: Record<string, string>;
}

/**
 * Starts the order service as a child process (kill it with `ChildApp.killAll()` in `afterAll`), and resolves
 * once it listens, with its base URL.
 */
export async function startOrderService(
  setup: OrderServiceSetup,
): Promise<{ app: ChildApp; baseUrl: string }> {
  const app = ChildApp.start(ORDER_SERVICE_MAIN, {
    env: {
      DATABASE_URL: setup.databaseUrl,
      AMQP_URL: setup.amqpUrl,
      MESSAGING_NAMESPACE: setup.namespace,
      PORT: '0',
      NO_COLOR: '1',
      RECEIPT_LATENCY_MS: '5',
      ...setup.env,
    },
  });
  const line = await app.waitForLine(/order service listening on port \d+/);
  return { app, baseUrl: `http://127.0.0.1:${/port (\d+)/.exec(line)?.[1]}` };
}
