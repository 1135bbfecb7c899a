import { messagingNames } from '../../apps/order-service/src/config/messaging-names';
import { ChildApp } from './child-app';
import type { TestBroker } from './test-broker';
import type { TestDatabase } from './test-database';

/** The compiled order service; ORDER_SERVICE_DIST names another build output than dist/. */
export const ORDER_SERVICE_MAIN = `${process.env.ORDER_SERVICE_DIST ?? 'dist'}/apps/order-service/src/main.js`;

/** The order service's queues under a namespace, each with its dead-letter queue, for `broker.track()`. */
export function orderServiceQueues(prefix: string): string[] {
  // The history's queue is partitioned: its partitions are declared, and deleted, by their own names.
  const { history: _partitioned, ...queues } = messagingNames(prefix).queues;
  return Object.values(queues).flatMap((queue) => [queue, `${queue}.dlq`]);
}

/** A response as the specs read it: status, headers and the JSON body. */
export interface HttpAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** The order service running as a child process on the spec's database and namespace, and its HTTP address. */
export class OrderServiceApp {
  private constructor(
    readonly process: ChildApp,
    readonly baseUrl: string,
  ) {}

  /** Starts the service on a free port and resolves once it listens; `env` adds to or overrides its environment. */
  static async start(
    database: TestDatabase,
    broker: TestBroker,
    env: Record<string, string | undefined> = {},
  ): Promise<OrderServiceApp> {
    const app = ChildApp.start(ORDER_SERVICE_MAIN, {
      env: {
        DATABASE_URL: database.url,
        AMQP_URL: broker.url,
        MESSAGING_NAMESPACE: broker.prefix,
        PORT: '0',
        NO_COLOR: '1',
        RECEIPT_LATENCY_MS: '5',
        ...env,
      },
    });
    const line = await app.waitForLine(/order service listening on port \d+/);
    broker.track(...orderServiceQueues(broker.prefix));
    return new OrderServiceApp(app, `http://127.0.0.1:${/port (\d+)/.exec(line)?.[1]}`);
  }

  /** `POST /orders` with `body`, and the given headers beside `content-type: application/json`. */
  async postOrder(body: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer> {
    const response = await fetch(`${this.baseUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      headers: response.headers,
      body: (await response.json()) as Record<string, unknown>,
    };
  }

  /** `GET <path>`. */
  async get(path: string): Promise<HttpAnswer> {
    const response = await fetch(`${this.baseUrl}${path}`);
    return {
      status: response.status,
      headers: response.headers,
      body: (await response.json()) as Record<string, unknown>,
    };
  }
}
