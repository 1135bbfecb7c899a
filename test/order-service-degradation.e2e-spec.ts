import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';
import { OrderServiceApp } from './support/order-service-app';
import { TcpProxy } from './support/tcp-proxy';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';
import { waitFor } from './support/wait-for';

/** A customer id that must never reach a log line, whatever fails. */
const CUSTOMER = 'customer-private-7391';

const ORDER = { customerId: CUSTOMER, items: [{ sku: 'MUG-RABBIT', quantity: 1, unitPrice: 5 }] };

interface LogRecord {
  level: string;
  message: unknown;
  context?: string;
}

/**
 * The order service as a process, reaching RabbitMQ and PostgreSQL through proxies the spec cuts, with its
 * default reconnect settings and JSON logs: how it answers, reports and logs while either is down, and how
 * soon it is back.
 */
describe('the order service while the broker or the database is down', () => {
  let database: TestDatabase;
  let broker: TestBroker;
  let brokerProxy: TcpProxy;
  let databaseProxy: TcpProxy;
  let app: ChildApp;
  let baseUrl: string;

  async function ready(): Promise<{
    status: number;
    text: string;
    body: { status: string; details: Record<string, { status: string }> };
  }> {
    const response = await fetch(`${baseUrl}/health/ready`);
    const text = await response.text();
    return { status: response.status, text, body: JSON.parse(text) as never };
  }

  async function placeOrder(): Promise<Response> {
    return fetch(`${baseUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ORDER),
    });
  }

  /** The app's log records so far (errors go to stderr), each line parsed as the JSON object LOG_FORMAT=json makes it. */
  const records = (): LogRecord[] => app.lines.map((line) => JSON.parse(line) as LogRecord);
  const probeLines = (): string[] =>
    records()
      .filter((record) => record.context === 'Health')
      .map((record) => String(record.message));

  beforeAll(async () => {
    database = await createTestDatabase();
    broker = await TestBroker.connect();
    brokerProxy = await TcpProxy.start(broker.url);
    databaseProxy = await TcpProxy.start(database.url);
    ({ process: app, baseUrl } = await OrderServiceApp.start(database, broker, {
      DATABASE_URL: databaseProxy.url,
      AMQP_URL: brokerProxy.url,
      LOG_FORMAT: 'json',
      // Colours are off in JSON by themselves: the check below holds without NO_COLOR's help.
      NO_COLOR: undefined,
    }));
  });

  // A case that fails part-way leaves no link cut for the next.
  afterEach(() => {
    brokerProxy?.restore();
    databaseProxy?.restore();
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await brokerProxy?.close();
    await databaseProxy?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await database?.drop();
  });

  it('stays ready through a broker outage naming no host, logs it once, and reconnects within 2 s of the broker', async () => {
    expect((await ready()).body.status).toBe('ok');
    const linesBefore = probeLines().length;

    brokerProxy.cut();
    const probeDuringOutage = async (): Promise<boolean> => {
      const probe = await ready();
      expect(probe.status).toBe(200);
      expect(probe.text).not.toMatch(/amqps?:|127\.0\.0\.1|localhost|guest|:\d{4,5}\b/);
      return probe.body.status === 'degraded';
    };
    // Long enough for the reconnect backoff to reach its cap: the worst case for coming back.
    await waitFor(
      'six refused reconnects, probing readiness meanwhile',
      async () => (await probeDuringOutage()) && brokerProxy.refusedConnections >= 6,
      { timeoutMs: 30_000 },
    );
    // Thirty probes more while the outage holds: the log gets a line per change of a check, not per probe.
    for (let probe = 0; probe < 30; probe++) expect(await probeDuringOutage()).toBe(true);

    brokerProxy.restore();
    const restoredAt = performance.now();
    await waitFor('both connections back', () => brokerProxy.connections >= 2, { intervalMs: 10 });
    const reconnectMs = performance.now() - restoredAt;
    await waitFor('readiness ok', async () => (await ready()).body.status === 'ok');
    const readyMs = performance.now() - restoredAt;

    expect(reconnectMs).toBeLessThan(2_000);
    // The app's log reaches the spec a moment after the probe's answer.
    await waitFor('the recovery logged', () => probeLines().at(-1) === 'readiness: ok');
    // A line per change: degraded, perhaps degraded otherwise as one check or connection changes, ok.
    const lines = probeLines().slice(linesBefore);
    expect(lines[0]).toMatch(/^readiness: degraded \(broker degraded: not connected/);
    expect(lines.at(-1)).toBe('readiness: ok');
    // The connections and the checks change one by one, each a line; never the same state twice in a row.
    expect(lines.length).toBeLessThanOrEqual(8);
    lines.slice(1).forEach((line, i) => expect(line).not.toBe(lines[i]));
    // The figure docs/operations.md quotes: connections back, then ready.
    process.stdout.write(
      `reconnected ${Math.round(reconnectMs)} ms, ready ${Math.round(readyMs)} ms after the broker returned\n`,
    );
  });

  it('answers 503 with Retry-After while the database is down, logs no customer data, and takes orders again after', async () => {
    const linesBefore = probeLines().length;
    databaseProxy.cut();

    let refused!: Response;
    await waitFor('an order refused with 503', async () => (refused = await placeOrder()).status === 503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.json()).toMatchObject({
      statusCode: 503,
      message: 'the database is unavailable; try again shortly',
    });
    await waitFor('readiness failing on the database', async () => {
      const probe = await ready();
      return probe.status === 503 && probe.body.details.database?.status === 'down';
    });

    databaseProxy.restore();
    await waitFor('an order accepted again', async () => (await placeOrder()).status === 201, {
      timeoutMs: 20_000,
    });
    await waitFor('readiness ok', async () => (await ready()).body.status === 'ok');

    await waitFor('the recovery logged', () => probeLines().at(-1) === 'readiness: ok');
    const output = [...app.stdout, ...app.stderr].join('\n');
    expect(output).not.toContain(CUSTOMER);
    expect(
      records().some((record) =>
        /POST \/orders: the database is unavailable \(\w+/.test(String(record.message)),
      ),
    ).toBe(true);
    const lines = probeLines().slice(linesBefore);
    expect(lines[0]).toMatch(/^readiness: error \(.*database down/);
    expect(lines.at(-1)).toBe('readiness: ok');
    expect(lines.length).toBeLessThanOrEqual(4);
  });

  it('writes every log line as one JSON object, with no colour codes', () => {
    expect(app.lines.length).toBeGreaterThan(10);
    for (const record of records())
      expect(record).toEqual(expect.objectContaining({ level: expect.any(String) }));
    expect([...app.stdout, ...app.stderr].join('\n')).not.toContain('\u001b[');
  });
});
