import { join } from 'node:path';
import type { ChannelModel } from 'amqplib';
import { Client } from 'pg';
import { describeExit, OrderServiceProcess } from '../apps/order-service/src/demo/order-service-process';
import { childProfileArgs } from './cpu-profile';
import { createEmptyBenchDatabase, type BenchDatabase } from './bench-database';
import { ORDER_FLOW_TRUNCATE } from './hand-written/order-flow/order-flow-schema';
import { orderFlowBrokerNames, orderFlowNames } from './hand-written/order-flow/order-topology';
import { AMQP_URL, deleteAll, ROUNDS, type Measurement } from './harness';
import {
  CONCURRENCY,
  FlowWatcher,
  latencies,
  offerAtRate,
  orderAppBrokerNames,
  ORDER_APP_TABLES,
  placeOrders,
  processCpuMicros,
  RECEIPT_LATENCY_MS,
  startOrderApp,
  type FlowTables,
} from './orders.bench';
import { report, type TransactionalCase } from './transactional-report';

/** Orders of each throughput run: `BENCH_TX_ORDERS`, else 2000. */
const ORDERS = Number(process.env.BENCH_TX_ORDERS ?? 2000);
/** Orders a second offered in the latency runs, the same to both services: `BENCH_TX_ORDER_RATE`, else 40. */
const ORDER_RATE = Number(process.env.BENCH_TX_ORDER_RATE ?? 40);
/** Orders of each latency run: `BENCH_TX_LATENCY_ORDERS`, else five seconds' worth, at most BENCH_TX_ORDERS. */
const LATENCY_ORDERS = Number(process.env.BENCH_TX_LATENCY_ORDERS ?? Math.min(ORDERS, 5 * ORDER_RATE));
/** Orders placed and settled before anything is measured, so each service's code is compiled and its pools full. */
const WARM_UP_ORDERS = Math.min(300, Math.ceil(ORDERS / 10));
/** The compiled hand-written order service, beside this file in dist/. */
const HAND_WRITTEN_MAIN = join(__dirname, 'hand-written', 'order-flow', 'main.js');
/**
 * Connections the idle service may hold while the other is measured: its relay's poll and the like. Both pools
 * full (60 each) would not fit PostgreSQL's default of 100 connections; the one measured would be refused some.
 */
const IDLE_CONNECTIONS = 8;
/** How long the case waits for the idle service's pool to shrink (pg's pools close a client idle for 10 s). */
const IDLE_WAIT_MS = 30_000;
/** The hand-written service's `application_name`, by which its connections are counted. */
const HAND_WRITTEN_APPLICATION = 'hand-written-order-service';
/** The throughput target for the whole flow; CPU and p99 are the suite's. */
const THROUGHPUT_TARGET = 0.8;

/** One of the two services as the case drives it. */
interface Service {
  who: 'module' | 'hand-written';
  app: OrderServiceProcess;
  baseUrl: string;
  client: Client;
  watcher: FlowWatcher;
  tables: FlowTables & { payments: string };
  /** Empties its tables, so each run starts from the same state. */
  reset: string;
  /** Counts the service's own connections, through its client (which it leaves out). */
  connections: string;
  into: TransactionalCase['module'];
}

/**
 * The order flow end to end: the order app (apps/order-service, its own database and namespace) against the
 * hand-written order service (bench/hand-written/order-flow/, tables in the suite's database), each a process of
 * its own whose CPU is read from /proc. In turn, BENCH_ROUNDS times: ORDERS orders posted with CONCURRENCY in
 * flight, timed from the first POST to the last receipt (throughput, CPU per order), then LATENCY_ORDERS at
 * ORDER_RATE a second, each timed from its POST to its receipt.
 */
export async function orderFlowCase(
  db: BenchDatabase,
  connection: ChannelModel,
  prefix: string,
): Promise<TransactionalCase> {
  const appDatabase = await createEmptyBenchDatabase();
  const appNamespace = `${prefix}.order-app`;
  const handNamespace = `${prefix}.hw-orders`;
  const result: TransactionalCase = {
    name: 'order-flow',
    scenario:
      `POST to receipt (saga, payment, saga, shipping, saga and receipt, history, activity), ${ORDERS} orders, ${CONCURRENCY} POSTs in flight; ` +
      `orders/s and CPU µs/order of the service's process; latency at ${ORDER_RATE} orders/s`,
    targets: { throughput: THROUGHPUT_TARGET },
    handWritten: { runs: [], latenciesMs: [] },
    module: { runs: [], latenciesMs: [] },
  };
  // Both start at once (the app's start, migrations included, takes seconds); a start that fails still stops both.
  const handWritten = OrderServiceProcess.start(
    HAND_WRITTEN_MAIN,
    {
      DATABASE_URL: db.url,
      AMQP_URL,
      MESSAGING_NAMESPACE: handNamespace,
      PORT: '0',
      RECEIPT_LATENCY_MS,
    },
    false,
    childProfileArgs('order-flow-hand-written'),
  );
  const app = startOrderApp(appDatabase.url, appNamespace, childProfileArgs('order-flow-module'));
  const clients: Client[] = [];
  try {
    const services = await Promise.all([
      start(
        'hand-written',
        handWritten,
        db.url,
        { orders: 'hw_orders', outbox: 'hw_outbox', history: 'hw_order_history', payments: 'hw_payments' },
        ORDER_FLOW_TRUNCATE,
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = '${HAND_WRITTEN_APPLICATION}'`,
        result.handWritten,
        clients,
      ),
      start(
        'module',
        app,
        appDatabase.url,
        { ...ORDER_APP_TABLES, payments: 'payments' },
        'TRUNCATE orders, order_items, payments, refunds, payment_voids, order_history, rm_saga, rm_saga_history, ' +
          'rm_scheduled, rm_inbox, rm_outbox',
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
        result.module,
        clients,
      ),
    ]);
    for (const service of services) {
      await poolShrunk(services.find((other) => other !== service) as Service);
      await placeOrders(service.baseUrl, WARM_UP_ORDERS, CONCURRENCY);
      await service.watcher.waitFor(WARM_UP_ORDERS, true, service.app);
    }
    for (let round = 1; round <= ROUNDS; round++) {
      for (const service of services) {
        const idle = services.find((other) => other !== service) as Service;
        await service.client.query(service.reset);
        await poolShrunk(idle);
        service.into.runs.push(await throughput(service, round));
        await service.client.query(service.reset);
        await poolShrunk(idle);
        service.into.latenciesMs.push(...(await latency(service)));
      }
    }
    return result;
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
    const exits = await Promise.all([handWritten.stop(), app.stop()]);
    for (const [who, exit] of [
      ['hand-written', exits[0]],
      ['module', exits[1]],
    ] as const) {
      if (exit.code !== 0)
        console.log(`transactional: order-flow: the ${who} service ended with ${describeExit(exit)}`);
    }
    // By name: the suite's cleanup lists what is left under its prefix (the module's retry and partition topology).
    const known = [
      ...orderAppBrokerNames(appNamespace),
      ...orderFlowBrokerNames(orderFlowNames(handNamespace)),
    ];
    await deleteAll(connection, { queues: known, exchanges: known });
    await appDatabase.drop();
  }
}

async function start(
  who: Service['who'],
  app: OrderServiceProcess,
  databaseUrl: string,
  tables: Service['tables'],
  reset: string,
  connections: string,
  into: Service['into'],
  clients: Client[],
): Promise<Service> {
  const port = await app.waitUntilListening(60_000);
  const client = new Client({ connectionString: databaseUrl });
  clients.push(client);
  await client.connect();
  const watcher = new FlowWatcher(client, tables);
  return { who, app, baseUrl: `http://127.0.0.1:${port}`, client, watcher, tables, reset, connections, into };
}

/**
 * Waits until `idle` (the service not measured next) holds at most IDLE_CONNECTIONS connections, its pool's
 * clients of the last run closed; after IDLE_WAIT_MS it says so and goes on.
 */
async function poolShrunk(idle: Service): Promise<void> {
  const deadline = Date.now() + IDLE_WAIT_MS;
  for (;;) {
    const { rows } = await idle.client.query<{ n: number }>(idle.connections);
    if (rows[0].n <= IDLE_CONNECTIONS) return;
    if (Date.now() > deadline) {
      console.log(`transactional: order-flow: the ${idle.who} service still holds ${rows[0].n} connections`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * ORDERS orders from the first POST to the last receipt, and the service's CPU over that time; then, once the
 * flow settled, a check that each order was paid once and got its receipt, and every status change recorded.
 */
async function throughput(service: Service, round: number): Promise<Measurement> {
  const cpuBefore = processCpuMicros(service.app.pid);
  const placed = await placeOrders(service.baseUrl, ORDERS, CONCURRENCY);
  await service.watcher.waitFor(ORDERS, false, service.app);
  const cpuAtLastReceipt = processCpuMicros(service.app.pid);
  await service.watcher.waitFor(ORDERS, true, service.app);
  const receipts = await service.watcher.receiptTimes(placed.map((order) => order.id));
  const firstPost = placed.reduce((first, order) => Math.min(first, order.postedAt), Infinity);
  const lastReceipt = [...receipts.values()].reduce((last, sent) => Math.max(last, sent), 0);
  const { rows } = await service.client.query<{ payments: number; paid: number; history: number }>(
    `SELECT (SELECT count(*) FROM ${service.tables.payments})::int AS payments,
            (SELECT count(DISTINCT order_id) FROM ${service.tables.payments})::int AS paid,
            (SELECT count(*) FROM ${service.tables.history})::int AS history`,
  );
  const { payments, paid, history } = rows[0];
  report({
    name: 'order-flow',
    round,
    who: service.who,
    handled: receipts.size,
    of: ORDERS,
    rows: `${payments} payments for ${paid} orders, ${history} history entries`,
    ok: payments === ORDERS && paid === ORDERS && history === 4 * ORDERS,
  });
  return {
    messages: ORDERS,
    seconds: (lastReceipt - firstPost) / 1000,
    cpuMicros: cpuAtLastReceipt - cpuBefore,
  };
}

/** LATENCY_ORDERS offered at ORDER_RATE, each from its POST to its receipt (ms). */
async function latency(service: Service): Promise<number[]> {
  const offered = await offerAtRate(service.baseUrl, ORDER_RATE, LATENCY_ORDERS / ORDER_RATE);
  await service.watcher.waitFor(offered.length, true, service.app);
  return latencies(offered, await service.watcher.receiptTimes(offered.map((order) => order.id)));
}
