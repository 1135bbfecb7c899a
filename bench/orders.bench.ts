import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { delayLevelNames, deliverExchangeName } from 'nestjs-reliable-messaging/operations';
import { messagingNames } from '../apps/order-service/src/config/messaging-names';
import { orderDataSourceOptions } from '../apps/order-service/src/database/order-data-source';
import { describeExit, OrderServiceProcess } from '../apps/order-service/src/demo/order-service-process';
import { runBounded } from '../apps/order-service/src/demo/run-bounded';
import { asAdmin, createEmptyBenchDatabase } from './bench-database';
import {
  AMQP_URL,
  deleteByPrefix,
  percentile,
  rawConnection,
  startRun,
  uniquePrefix,
  type Measurement,
  type Suite,
} from './harness';

/** Orders of the throughput run: `BENCH_ORDERS`, else 5000. */
const ORDERS = Number(process.env.BENCH_ORDERS ?? 5000);
/** `POST /orders` requests in flight at once in the throughput run: `BENCH_ORDERS_CONCURRENCY`, else 30. */
export const CONCURRENCY = Number(process.env.BENCH_ORDERS_CONCURRENCY ?? 30);
/** Orders placed and settled before anything is measured, so the app's code is compiled and its pools full. */
const WARM_UP_ORDERS = Math.min(300, Math.ceil(ORDERS / 10));
/** How long the latency run offers its constant rate: `BENCH_ORDERS_LATENCY_SECONDS`, else 10. */
const LATENCY_SECONDS = Number(process.env.BENCH_ORDERS_LATENCY_SECONDS ?? 10);
/** How long each commit-ceiling run lasts: `BENCH_ORDERS_CEILING_SECONDS`, else 5. */
const CEILING_SECONDS = Number(process.env.BENCH_ORDERS_CEILING_SECONDS ?? 5);
/**
 * Mean latency of the app's stand-in receipt service: `BENCH_ORDERS_RECEIPT_LATENCY_MS`, else 0, so the flow is
 * measured rather than the stand-in's sleep (at its default 20 ms, the receipt consumer's 10 handlers would cap
 * receipts at about 500/s).
 */
export const RECEIPT_LATENCY_MS = process.env.BENCH_ORDERS_RECEIPT_LATENCY_MS ?? '0';
/** How long the flow may make no progress before the run gives up. */
const STALL_TIMEOUT_MS = 60_000;
/** How often the benchmark looks at the app's database while waiting for the flow. */
const POLL_MS = 100;
/**
 * How long to wait before reading pg_stat_database: a backend reports its counts when it goes idle, at most once
 * a second (PostgreSQL 15's PGSTAT_MIN_INTERVAL).
 */
const STATS_FLUSH_MS = 2000;
/** The compiled order service, beside this file in dist/. */
const ORDER_SERVICE_MAIN = join(__dirname, '..', 'apps', 'order-service', 'src', 'main.js');
/** Entries the order history and the activity feed record per order: each of its two status changes, twice. */
const HISTORY_ROWS_PER_ORDER = 4;
/** Clock ticks a second of /proc/<pid>/stat's CPU times: USER_HZ, 100 on Linux. */
const USER_HZ = 100;

const ORDER_BODY = JSON.stringify({
  customerId: 'bench-customer',
  items: [
    { sku: 'BOOK-DDIA', quantity: 2, unitPrice: 19.99 },
    { sku: 'MUG-RABBIT', quantity: 1, unitPrice: 5 },
  ],
});

/** An order the app accepted, and when its POST was sent (epoch ms, the clock the app stamps receipts with). */
export interface PlacedOrder {
  id: string;
  postedAt: number;
}

/** `POST /orders` once; fetch keeps the connection alive for the next request. */
async function placeOrder(baseUrl: string): Promise<PlacedOrder> {
  const postedAt = Date.now();
  const response = await fetch(`${baseUrl}/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: ORDER_BODY,
  });
  const body = (await response.json().catch(() => undefined)) as { id?: unknown } | undefined;
  if (response.status !== 201 || typeof body?.id !== 'string') {
    throw new Error(`POST /orders answered ${response.status}: ${JSON.stringify(body)}`);
  }
  return { id: body.id, postedAt };
}

/** `count` orders, `concurrency` POSTs in flight at once. */
export async function placeOrders(
  baseUrl: string,
  count: number,
  concurrency: number,
): Promise<PlacedOrder[]> {
  const placed: PlacedOrder[] = [];
  await runBounded(count, concurrency, async () => {
    placed.push(await placeOrder(baseUrl));
  });
  return placed;
}

/**
 * Sends a POST every 1/rate seconds for `seconds`, each on its schedule whether or not earlier ones were answered
 * (an open loop: a slow answer does not slow the offered load, so it cannot hide in the latencies).
 */
export async function offerAtRate(baseUrl: string, rate: number, seconds: number): Promise<PlacedOrder[]> {
  const count = Math.max(1, Math.round(rate * seconds));
  const started = performance.now();
  const sent: Promise<PlacedOrder>[] = [];
  for (let n = 0; n < count; n++) {
    const wait = started + (n * 1000) / rate - performance.now();
    if (wait >= 1) await sleep(wait);
    sent.push(placeOrder(baseUrl));
  }
  return Promise.all(sent);
}

/** The tables an order service keeps its orders, outbox and order history in. */
export interface FlowTables {
  orders: string;
  outbox: string;
  history: string;
}

/** The order app's tables. */
export const ORDER_APP_TABLES: FlowTables = {
  orders: 'orders',
  outbox: 'rm_outbox',
  history: 'order_history',
};

/**
 * The benchmark's connection to an order service's database. Each query is a transaction of its own, so the
 * number sent is subtracted from the database's commit count.
 */
export class FlowWatcher {
  queries = 0;

  constructor(
    private readonly client: Client,
    private readonly tables: FlowTables = ORDER_APP_TABLES,
  ) {}

  /** Orders with a receipt, orders shipped, outbox rows still to relay, and entries of the order history. */
  async progress(): Promise<{ receipts: number; shipped: number; pending: number; history: number }> {
    this.queries++;
    const { orders, outbox, history } = this.tables;
    const { rows } = await this.client.query<{
      receipts: number;
      shipped: number;
      pending: number;
      history: number;
    }>(
      `SELECT count(*) FILTER (WHERE receipt_id IS NOT NULL)::int AS receipts,
              count(*) FILTER (WHERE status = 'shipped')::int AS shipped,
              (SELECT count(*) FROM ${outbox} WHERE status = 'pending')::int AS pending,
              (SELECT count(*) FROM ${history})::int AS history
         FROM ${orders}`,
    );
    return rows[0];
  }

  /** When each order's receipt was sent (epoch ms); an order without one is missing from the map. */
  async receiptTimes(ids: string[]): Promise<Map<string, number>> {
    this.queries++;
    const { rows } = await this.client.query<{ id: string; sent: Date }>(
      `SELECT id, receipt_sent_at AS sent FROM ${this.tables.orders} WHERE id = ANY($1::uuid[]) AND receipt_sent_at IS NOT NULL`,
      [ids],
    );
    return new Map(rows.map((row) => [row.id, row.sent.getTime()]));
  }

  /**
   * Resolves once `total` orders have their receipt and, with `settled`, are shipped with nothing left in the
   * outbox and every status change in the order history and the activity feed; rejects when nothing moved for
   * STALL_TIMEOUT_MS.
   */
  async waitFor(total: number, settled: boolean, app: OrderServiceProcess): Promise<void> {
    let last = '';
    let lastChange = Date.now();
    for (;;) {
      const now = await this.progress();
      const done =
        now.receipts >= total &&
        (!settled ||
          (now.shipped >= total && now.pending === 0 && now.history >= HISTORY_ROWS_PER_ORDER * total));
      if (done) return;
      const seen = JSON.stringify(now);
      if (seen !== last) [last, lastChange] = [seen, Date.now()];
      if (Date.now() - lastChange > STALL_TIMEOUT_MS) {
        throw new Error(
          `the flow made no progress for ${STALL_TIMEOUT_MS / 1000} s: ${now.receipts}/${total} receipts, ` +
            `${now.shipped}/${total} shipped, ${now.pending} outbox rows pending, ` +
            `${now.history}/${HISTORY_ROWS_PER_ORDER * total} history entries; the app's last lines:\n` +
            app.tail.join('\n'),
        );
      }
      await sleep(POLL_MS);
    }
  }
}

/** Commits the app's database has counted so far (pg_stat_database.xact_commit). */
async function commitsOf(database: string): Promise<number> {
  const rows = await asAdmin('SELECT xact_commit FROM pg_stat_database WHERE datname = $1', [database]);
  return Number(rows[0]?.xact_commit);
}

/** Connections the ceiling leaves free for everything else on the server (the benchmark's own client, psql). */
const CEILING_SPARE_CONNECTIONS = 5;

/**
 * How many of `wanted` connections the server can take now: the app's pool may still hold its idle connections,
 * and the app's pool and the ceiling's clients together can be more than `max_connections`.
 */
async function freeConnections(url: string, wanted: number): Promise<number> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ free: number }>(
      `SELECT current_setting('max_connections')::int - (SELECT count(*) FROM pg_stat_activity)::int AS free`,
    );
    return Math.max(1, Math.min(wanted, rows[0].free - CEILING_SPARE_CONNECTIONS));
  } finally {
    await client.end();
  }
}

/**
 * What the database can commit: single-row INSERTs, each a transaction of its own, from up to `clients`
 * connections of the `pg` driver at once (as many as the server has free) for CEILING_SECONDS.
 */
async function commitCeiling(
  url: string,
  clients: number,
): Promise<{ commitsPerSecond: number; clients: number }> {
  const count = await freeConnections(url, clients);
  const connections = Array.from({ length: count }, () => new Client({ connectionString: url }));
  await Promise.all(connections.map((client) => client.connect()));
  try {
    await connections[0].query(
      'CREATE TABLE IF NOT EXISTS bench_commit_ceiling (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, client int NOT NULL)',
    );
    let commits = 0;
    const end = startRun(0);
    const deadline = performance.now() + CEILING_SECONDS * 1000;
    await Promise.all(
      connections.map(async (client, n) => {
        while (performance.now() < deadline) {
          await client.query({
            name: 'ceiling-insert',
            text: 'INSERT INTO bench_commit_ceiling (client) VALUES ($1)',
            values: [n],
          });
          commits++;
        }
      }),
    );
    return { commitsPerSecond: commits / end().seconds, clients: count };
  } finally {
    await Promise.all(connections.map((client) => client.end()));
  }
}

/** CPU time a process has spent so far (user + system), in microseconds, from /proc. */
export function processCpuMicros(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    // The fields after the command name, which is in parentheses and may hold spaces.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / USER_HZ) * 1e6;
  } catch {
    return Number.NaN;
  }
}

/** Order-to-receipt latencies of `orders`, in ms; throws when one has no receipt. */
export function latencies(orders: PlacedOrder[], receipts: Map<string, number>): number[] {
  return orders.map((order) => {
    const sent = receipts.get(order.id);
    if (sent === undefined) throw new Error(`order ${order.id} has no receipt`);
    return sent - order.postedAt;
  });
}

function fixed(value: number, digits = 0): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '—';
}

/**
 * Starts the order app from dist/ on `databaseUrl` (empty: it applies its migrations) with every exchange and queue
 * under `namespace`, its receipt consumer unthrottled and its stand-in receipt service at RECEIPT_LATENCY_MS.
 */
export function startOrderApp(
  databaseUrl: string,
  namespace: string,
  nodeArgs: readonly string[] = [],
): OrderServiceProcess {
  return OrderServiceProcess.start(
    ORDER_SERVICE_MAIN,
    {
      DATABASE_URL: databaseUrl,
      AMQP_URL,
      MESSAGING_NAMESPACE: namespace,
      PORT: '0',
      RECEIPT_RATE_LIMIT: '0',
      RECEIPT_LATENCY_MS,
    },
    false,
    nodeArgs,
  );
}

/** The queues and exchanges the order app declares under `namespace`: what a cleanup deletes. */
export function orderAppBrokerNames(namespace: string): string[] {
  const names = messagingNames(namespace);
  return [
    ...Object.values(names.queues).flatMap((queue) => [queue, `${queue}.dlq`]),
    ...delayLevelNames(names.exchange),
    names.exchange,
    names.deadLetterExchange,
    deliverExchangeName(names.exchange),
  ];
}

/**
 * The sample order service end to end, as a child process from dist/ on a database and namespace of its own:
 * orders through `POST /orders`, the outbox, payment (inbox), shipping and the receipt consumer (no rate limit),
 * timed from each POST to its receipt. Its throughput is set against the database's bound: the commits one
 * order costs across the whole flow (pg_stat_database) and what the database commits a second, measured in
 * the same run.
 */
export const ordersSuite: Suite = {
  name: 'orders',
  async run() {
    const prefix = uniquePrefix('orders');
    const database = await createEmptyBenchDatabase();
    const connection = await rawConnection(`${prefix}.cleanup`);
    const poolSize = (orderDataSourceOptions(database.url) as { poolSize: number }).poolSize;
    let app: OrderServiceProcess | undefined;
    let client: Client | undefined;
    console.log(`orders: database ${database.name}, namespace ${prefix}`);
    try {
      const starting = performance.now();
      app = startOrderApp(database.url, prefix);
      const baseUrl = `http://127.0.0.1:${await app.waitUntilListening(60_000)}`;
      console.log(`orders: app started in ${((performance.now() - starting) / 1000).toFixed(1)} s`);
      client = new Client({ connectionString: database.url });
      await client.connect();
      const flow = new FlowWatcher(client);

      await placeOrders(baseUrl, WARM_UP_ORDERS, CONCURRENCY);
      await flow.waitFor(WARM_UP_ORDERS, true, app);
      const before = await commitCeiling(database.url, poolSize);
      const ceilingBefore = before.commitsPerSecond;

      // The throughput run: between two quiet reads of the commit counter, so that it holds every commit of
      // the run's orders (and the few of the benchmark's own queries, subtracted).
      await sleep(STATS_FLUSH_MS);
      const commitsBefore = await commitsOf(database.name);
      const queriesBefore = flow.queries;
      const cpuBefore = processCpuMicros(app.pid);
      const placed = await placeOrders(baseUrl, ORDERS, CONCURRENCY);
      await flow.waitFor(WARM_UP_ORDERS + ORDERS, false, app);
      const cpuAtLastReceipt = processCpuMicros(app.pid);
      await flow.waitFor(WARM_UP_ORDERS + ORDERS, true, app);
      await sleep(STATS_FLUSH_MS);
      const commits = (await commitsOf(database.name)) - commitsBefore - (flow.queries - queriesBefore);
      const receipts = await flow.receiptTimes(placed.map((order) => order.id));
      console.log(
        `orders: ${receipts.size}/${placed.length} orders got their receipt (throughput run, ` +
          `${CONCURRENCY} POSTs in flight)`,
      );
      const firstPost = placed.reduce((first, order) => Math.min(first, order.postedAt), Infinity);
      const lastReceipt = [...receipts.values()].reduce((last, sent) => Math.max(last, sent), 0);
      const fullLoad = latencies(placed, receipts);
      const throughput: Measurement = {
        messages: ORDERS,
        seconds: (lastReceipt - firstPost) / 1000,
        cpuMicros: cpuAtLastReceipt - cpuBefore,
      };
      const ordersPerSecond = throughput.messages / throughput.seconds;
      const commitsPerOrder = commits / ORDERS;

      const after = await commitCeiling(database.url, poolSize);
      const ceilingAfter = after.commitsPerSecond;
      const ceiling = (ceilingBefore + ceilingAfter) / 2;
      const bound = ceiling / commitsPerOrder;

      // The latency run: half the measured maximum, offered at a constant rate.
      const offered = ordersPerSecond / 2;
      const steady = await offerAtRate(baseUrl, offered, LATENCY_SECONDS);
      await flow.waitFor(WARM_UP_ORDERS + ORDERS + steady.length, false, app);
      const steadyReceipts = await flow.receiptTimes(steady.map((order) => order.id));
      console.log(
        `orders: ${steadyReceipts.size}/${steady.length} orders got their receipt (latency run, ` +
          `${offered.toFixed(0)} orders/s offered for ${LATENCY_SECONDS} s)`,
      );
      const halfLoad = latencies(steady, steadyReceipts);

      const table = [
        '| orders, end to end | figure |',
        '| --- | ---: |',
        `| orders/s, POST to receipt (${ORDERS} orders, ${CONCURRENCY} POSTs in flight, no receipt rate limit) | ${fixed(ordersPerSecond)} |`,
        `| commits per order across the flow (xact_commit delta ÷ orders) | ${fixed(commitsPerOrder, 2)} |`,
        `| commit ceiling: single-row INSERT transactions from ${before.clients} and ${after.clients} pg clients (before, after the run; the app's pool size, ${poolSize}, or what the server had free) | ${fixed(ceilingBefore)}, ${fixed(ceilingAfter)} commits/s |`,
        `| the database's bound: mean ceiling ÷ commits per order | ${fixed(bound)} orders/s |`,
        `| orders/s ÷ bound | ${fixed(ordersPerSecond / bound, 2)} |`,
        `| app CPU per order (its process, first POST to last receipt) | ${fixed(throughput.cpuMicros / 1000 / ORDERS, 2)} ms |`,
        `| POST to receipt at full load: p50 / p99 / max | ${fixed(percentile(fullLoad, 50))} / ${fixed(percentile(fullLoad, 99))} / ${fixed(percentile(fullLoad, 100))} ms |`,
        `| POST to receipt at half the max, ${fixed(offered)} orders/s offered for ${LATENCY_SECONDS} s: p50 / p99 / max | ${fixed(percentile(halfLoad, 50))} / ${fixed(percentile(halfLoad, 99))} / ${fixed(percentile(halfLoad, 100))} ms |`,
      ].join('\n');
      return {
        comparisons: [
          {
            suite: 'orders',
            scenario:
              'POST to receipt, baseline: the database bound (commit ceiling ÷ commits per order); module CPU: the app process per order',
            baseline: [{ messages: bound, seconds: 1, cpuMicros: Number.NaN }],
            candidate: [throughput],
            target: 0,
          },
        ],
        latencies: [],
        tables: [table],
      };
    } finally {
      await client?.end().catch(() => undefined);
      if (app) {
        const exit = await app.stop();
        if (exit.code !== 0) console.log(`orders: the app ended with ${describeExit(exit)}`);
      }
      await deleteByPrefix(connection, prefix, orderAppBrokerNames(prefix));
      await connection.close();
      await database.drop();
    }
  },
};
