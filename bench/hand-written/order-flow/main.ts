import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as amqp from 'amqplib';
import pg from 'pg';
import { FakeReceiptClient } from '../../../apps/order-service/src/receipt/fake-receipt-client';
import { OutboxRelay } from '../outbox-relay';
import { TransactionalConsumer, type TransactionalWork } from '../transactional-consumer';
import {
  historyWork,
  paymentGatewayWork,
  receiptWork,
  shippingWork,
  type OrderFlowContext,
} from './order-consumers';
import { orderRequests } from './order-http';
import { sagaPaymentCapturedWork, sagaPlacedWork, sagaShippedWork } from './order-saga';
import { declareOrderFlow, orderFlowNames, type ConsumerQueue } from './order-topology';
import { placeOrder } from './place-order';

/**
 * The hand-written order service: the order app's flow (apps/order-service) with `pg`, `amqplib` and node:http
 * only, as a process of its own. `POST /orders` stores the order and its events in one transaction; the relay
 * sends them with confirms; then the order saga's steps (a versioned instance row per order with its history)
 * and the services they drive: OrderPlaced → the saga requests the payment and schedules its timeout → the
 * gateway charges → the saga marks the order paid → shipping ships → the saga completes (its timeout deleted)
 * and the receipt is sent; the order history over four ordered partitions and the activity feed follow the
 * status changes. Each consumer handles a message in one transaction with its inbox row and its outbox rows,
 * with the app's prefetch.
 *
 * Environment: `DATABASE_URL` (its tables made beforehand: HAND_WRITTEN_TABLES and ORDER_FLOW_TABLES),
 * `AMQP_URL`, `MESSAGING_NAMESPACE` (prefix of every exchange and queue), `PORT` (0 picks one) and
 * `RECEIPT_LATENCY_MS` (the stand-in receipt service's mean latency, as the app's; default 20) and
 * `PAYMENT_TIMEOUT_MS` (how far ahead the saga schedules an order's payment timeout, as the app's; default 15 min).
 * The timeouts are written and deleted as the app's are, but nothing here sends one that falls due: no order of
 * the benchmark waits that long, and the app's ways out (cancelling, refunding) are not part of the comparison.
 */
const env = {
  databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  amqpUrl: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  namespace: process.env.MESSAGING_NAMESPACE ?? 'hand-written-orders',
  port: Number(process.env.PORT ?? 3000),
  receiptLatencyMs: Number(process.env.RECEIPT_LATENCY_MS ?? 20),
  paymentTimeoutMs: Number(process.env.PAYMENT_TIMEOUT_MS ?? 15 * 60 * 1000),
};

/** The app's pool size: its consumers' 48 transactions at once, HTTP requests and the relay share it. */
const POOL_SIZE = 60;
/** The connections' `application_name`: the benchmark counts them by it. */
const APPLICATION_NAME = 'hand-written-order-service';
/** The relay's settings: the module's defaults, which the app runs with. */
const RELAY = { batchSize: 200, workers: 2, pollMs: 1000 };

async function main(): Promise<void> {
  const names = orderFlowNames(env.namespace);
  // The AMQP app id the app gives its messages: the service name and the namespace.
  const appId = `order-service.${env.namespace}`;
  let stopping = false;
  const pool = new pg.Pool({
    connectionString: env.databaseUrl,
    max: POOL_SIZE,
    application_name: APPLICATION_NAME,
  });
  pool.on('error', (error) => console.error(`database pool: ${error.message}`));
  // One connection publishes, another consumes, as the module does: acks never queue behind publishes.
  const connect = async (role: string): Promise<amqp.ChannelModel> => {
    const connection = await amqp.connect(env.amqpUrl, {
      clientProperties: { connection_name: `${appId}.${role}` },
    });
    // NOTE: a lost connection is not reconnected here; the process exits and its supervisor restarts it.
    connection.on('close', () => {
      if (!stopping) fail(new Error(`the ${role} connection closed`));
    });
    connection.on('error', (error: Error) => console.error(`${role} connection: ${error.message}`));
    return connection;
  };
  const publishing = await connect('publisher');
  const consuming = await connect('consumer');
  await declareOrderFlow(publishing, names);

  const relay = new OutboxRelay({ pool, connection: publishing, ...RELAY });
  const context: OrderFlowContext = {
    appId,
    exchange: names.exchange,
    receipts: new FakeReceiptClient({ latencyMs: env.receiptLatencyMs }),
    paymentTimeoutMs: env.paymentTimeoutMs,
  };
  const consumer = (queue: ConsumerQueue, work: TransactionalWork, options: { wakeRelay?: boolean } = {}) =>
    new TransactionalConsumer({
      connection: consuming,
      pool,
      queue: queue.queue,
      consumer: queue.queue,
      prefetch: queue.prefetch,
      work,
      // A step's events are in the outbox once its transaction committed: the relay need not wait its poll.
      handled: options.wakeRelay ? () => relay.wake() : undefined,
    });
  const consumers = [
    consumer(names.sagaPlaced, sagaPlacedWork(context), { wakeRelay: true }),
    consumer(names.payment, paymentGatewayWork(context), { wakeRelay: true }),
    consumer(names.sagaPaymentCaptured, sagaPaymentCapturedWork(context), { wakeRelay: true }),
    consumer(names.shipping, shippingWork(context), { wakeRelay: true }),
    consumer(names.sagaShipped, sagaShippedWork()),
    consumer(names.receipt, receiptWork(context)),
    ...names.history.map((partition) => consumer(partition, historyWork('history'))),
    consumer(names.activity, historyWork('activity')),
  ];

  const server = createServer(
    { keepAlive: true },
    orderRequests(async (order) => {
      const placed = await placeOrder(pool, order, appId, names.exchange);
      relay.wake();
      return placed;
    }),
  );
  relay.start();
  for (const each of consumers) await each.start();
  await new Promise<void>((resolve) => server.listen(env.port, resolve));
  // The benchmark waits for this line, as it does for the app's.
  console.log(`hand-written order service listening on port ${(server.address() as AddressInfo).port}`);

  // Shutdown in the order that loses nothing: no new orders, consumers drained (each in-flight message
  // committed and acked, or rolled back and returned), the relay's round finished, then the connections.
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log(`shutting down on ${signal}`);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    for (const each of consumers) await each.stop();
    await relay.stop();
    await consuming.close();
    await publishing.close();
    await pool.end();
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => void stop(signal).catch(fail));
  }
}

function fail(error: unknown): void {
  console.error(
    `hand-written order service failed: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
}

main().catch(fail);
