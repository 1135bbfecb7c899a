import { ChildApp } from './child-app';
import type { TestBroker } from './test-broker';
import type { TestDatabase } from './test-database';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
export const IDEMPOTENCY_FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/idempotency-app.js`;

/** The table of orders the fixture's `POST /orders` writes: create it in the spec's database. */
export const FIXTURE_ORDERS_TABLE =
  'CREATE TABLE fixture_orders (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), ref text NOT NULL)';

/** An answer as the specs read it. */
export interface IdempotencyAnswer {
  status: number;
  replayed: string | null;
  body: Record<string, unknown>;
}

/** test/fixtures/idempotency-app.ts running as a child process, and its HTTP address. */
export class IdempotencyFixtureApp {
  private constructor(
    readonly process: ChildApp,
    readonly baseUrl: string,
  ) {}

  /** Starts the fixture app on the spec's database and broker namespace; resolves once it listens. */
  static async start(
    database: TestDatabase,
    broker: TestBroker,
    role = 'app',
  ): Promise<IdempotencyFixtureApp> {
    const app = IdempotencyFixtureApp.spawn(database, broker, role);
    const line = await app.waitForLine(/^fixture: listening on port \d+$/);
    return new IdempotencyFixtureApp(app, `http://127.0.0.1:${/port (\d+)/.exec(line)?.[1]}`);
  }

  /** Starts the fixture app without waiting for it, for a start that must fail. */
  static spawn(database: TestDatabase, broker: TestBroker, role: string): ChildApp {
    return ChildApp.start(IDEMPOTENCY_FIXTURE, {
      env: {
        FIXTURE_ROLE: role,
        DATABASE_URL: database.url,
        AMQP_URL: broker.url,
        FIXTURE_EXCHANGE: broker.name(`events-${role}`),
        FIXTURE_CONNECTION_NAME: `${broker.prefix}.${role}`,
        NO_COLOR: '1',
      },
    });
  }

  /**
   * Sends `body` as JSON (a string is sent as it is), with `Idempotency-Key: key` when given and `headers`
   * besides.
   */
  async send(
    method: string,
    path: string,
    body: unknown,
    key?: string,
    headers: Record<string, string> = {},
  ): Promise<IdempotencyAnswer> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(key === undefined ? {} : { 'idempotency-key': key }),
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return {
      status: response.status,
      replayed: response.headers.get('idempotent-replayed'),
      body: (await response.json()) as Record<string, unknown>,
    };
  }

  /** How many times the fixture's handlers ran for `ref`. */
  async runs(ref: string): Promise<number> {
    const response = await fetch(`${this.baseUrl}/runs/${encodeURIComponent(ref)}`);
    return ((await response.json()) as { runs: number }).runs;
  }
}
