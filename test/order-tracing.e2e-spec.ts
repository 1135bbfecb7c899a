import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { ChildApp } from './support/child-app';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';
import { waitFor } from './support/wait-for';
import { messagingNames } from '../apps/order-service/src/config/messaging-names';

/** The compiled order service; ORDER_SERVICE_DIST names another build output than dist/. */
const MAIN = `${process.env.ORDER_SERVICE_DIST ?? 'dist'}/apps/order-service/src/main.js`;
/** Its tracing bootstrap, preloaded with `--require` as OpenTelemetry documents (main.ts may import it too). */
const TRACING = resolve(process.cwd(), join(dirname(MAIN), 'observability', 'tracing.js'));

/** One span as OTLP/HTTP JSON carries it. */
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string } }>;
  links?: Array<{ traceId: string; spanId: string }>;
}

const SERVER = 2;
const PRODUCER = 4;
const CONSUMER = 5;

/** A stand-in OpenTelemetry collector: receives OTLP/HTTP JSON trace exports and keeps the spans. */
class SpanCollector {
  readonly spans: ExportedSpan[] = [];
  private server?: Server;

  async start(): Promise<string> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{ scopeSpans: Array<{ spans: ExportedSpan[] }> }>;
        };
        for (const resourceSpans of body.resourceSpans) {
          for (const scopeSpans of resourceSpans.scopeSpans) this.spans.push(...scopeSpans.spans);
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((listening) => this.server!.listen(0, '127.0.0.1', listening));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/traces`;
  }

  async stop(): Promise<void> {
    await new Promise((closed) => this.server?.close(closed));
  }
}

const attribute = (span: ExportedSpan, key: string) =>
  span.attributes.find((a) => a.key === key)?.value.stringValue;

/**
 * Trace context across HTTP, the outbox and the broker: the order service as a process with the OpenTelemetry
 * SDK exporting over OTLP, as in production, to a collector stand-in.
 */
describe('tracing: an order request and every consumer span it causes share one trace', () => {
  let database: TestDatabase;
  let broker: TestBroker;
  let collector: SpanCollector;
  let app: ChildApp;
  let baseUrl: string;
  /** The queues an order's flow goes through, in its order: the saga's, the gateway's, shipping's, receipt's. */
  const queues = (prefix: string) => {
    const names = messagingNames(prefix).queues;
    return [
      names.sagaPlaced,
      names.payment,
      names.sagaPaymentCaptured,
      names.shipping,
      names.sagaShipped,
      names.receipt,
    ];
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    broker = await TestBroker.connect();
    collector = new SpanCollector();
    const endpoint = await collector.start();
    app = ChildApp.start(MAIN, {
      env: {
        NODE_OPTIONS: `--require ${TRACING}`,
        DATABASE_URL: database.url,
        AMQP_URL: broker.url,
        MESSAGING_NAMESPACE: broker.prefix,
        PORT: '0',
        NO_COLOR: '1',
        RECEIPT_LATENCY_MS: '5',
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_SERVICE_NAME: 'order-service-under-test',
      },
    });
    const line = await app.waitForLine(/order service listening on port \d+/);
    baseUrl = `http://127.0.0.1:${/port (\d+)/.exec(line)?.[1]}`;
    broker.track(...queues(broker.prefix).flatMap((queue) => [queue, `${queue}.dlq`]));
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await collector?.stop();
    await broker?.deleteByPrefix();
    await broker?.close();
    await database?.drop();
  });

  it("links the HTTP request, the outbox create span, the relay send and every consumer of the order saga's flow", async () => {
    const response = await fetch(`${baseUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        customerId: 'customer-t',
        items: [{ sku: 'BOOK-DDIA', quantity: 1, unitPrice: 19.99 }],
      }),
    });
    expect(response.status).toBe(201);
    const flow = queues(broker.prefix);
    const processSpans = () =>
      collector.spans.filter((span) => span.kind === CONSUMER && span.name.startsWith('process '));
    await waitFor(
      () =>
        `process spans of the flow's six consumers (saw ${processSpans()
          .map((span) => span.name)
          .join(', ')})`,
      () => flow.every((queue) => processSpans().some((span) => span.name === `process ${queue}`)),
      { timeoutMs: 20_000 },
    );

    const request = collector.spans.find((span) => span.kind === SERVER && span.name.startsWith('POST'));
    expect(request).toBeDefined();
    const traceId = request!.traceId;
    expect(processSpans().map((span) => ({ name: span.name, traceId: span.traceId }))).toEqual(
      processSpans().map((span) => ({ name: span.name, traceId })),
    );
    const byId = new Map(collector.spans.map((span) => [span.spanId, span]));
    const [placedQueue, , capturedQueue, shippingQueue] = flow;
    // OrderPlaced, created in the request's span, handled by the saga's first step.
    const payment = processSpans().find((span) => span.name === `process ${placedQueue}`)!;
    const created = byId.get(payment.parentSpanId!)!;
    expect(created).toMatchObject({ kind: PRODUCER, traceId });
    expect(created.name).toMatch(/^create /);
    expect(created.parentSpanId).toBe(request!.spanId);
    expect(attribute(payment, 'messaging.system')).toBe('rabbitmq');
    expect(attribute(payment, 'messaging.operation.type')).toBe('process');
    const relayed = collector.spans.find(
      (span) => span.name.startsWith('send ') && span.links?.[0]?.spanId === created.spanId,
    );
    expect(relayed).toMatchObject({ traceId, parentSpanId: created.spanId });
    // OrderPaid, created by the saga's step on PaymentCaptured, handled by shipping.
    const shipping = processSpans().find((span) => span.name === `process ${shippingQueue}`)!;
    const paid = byId.get(shipping.parentSpanId!)!;
    expect(paid.name).toMatch(/^create /);
    expect(byId.get(paid.parentSpanId!)?.name).toBe(`process ${capturedQueue}`);
  });
});
