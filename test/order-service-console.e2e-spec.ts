import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ConfirmChannel } from 'amqplib';
import { Pool } from 'pg';
import { plantPoisonOrder, type PlantedPoison } from '../apps/order-service/src/demo/poison-order';
import { ChildApp } from './support/child-app';
import { csrfOf, FormBrowser, type ConsolePage } from './support/form-browser';
import { OrderServiceApp } from './support/order-service-app';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';
import { waitFor } from './support/wait-for';

const ADMIN_TOKEN = '8a8ee721e9c36fc44c48a8fc39165ca5d53101a8';

/** The hidden fields of the page's form that posts to `action`, in order, as the browser would send them. */
function hiddenFieldsOf(page: ConsolePage, action: string): Array<[string, string]> {
  const form = new RegExp(`<form[^>]*action="${action}"[^>]*>([\\s\\S]*?)</form>`).exec(page.html)?.[1];
  if (form === undefined)
    throw new Error(`no form posting to ${action} on the page: ${page.html.slice(0, 300)}`);
  return [...form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map(
    ([, name, value]) => [name, value.replaceAll('&amp;', '&').replaceAll('&quot;', '"')] as [string, string],
  );
}

describe('the order service serves the operator console with ADMIN_TOKEN set: sign in, then replay and purge real dead letters through its forms', () => {
  let database: TestDatabase;
  let broker: TestBroker;
  let app: OrderServiceApp;
  let sql: Pool;
  let channel: ConfirmChannel;
  let browser: FormBrowser;
  let paymentQueue: string;
  let consoleBase: string;
  /** Two poison OrderPlaced messages, each naming an order that does not exist: one to fix, one to purge. */
  let toFix: PlantedPoison;
  let toPurge: PlantedPoison;

  beforeAll(async () => {
    database = await createTestDatabase();
    broker = await TestBroker.connect();
    // Short retries, so a poison message is dead-lettered within a second or two.
    app = await OrderServiceApp.start(database, broker, {
      ADMIN_TOKEN,
      RETRY_MAX_ATTEMPTS: '2',
      RETRY_INITIAL_DELAY_MS: '100',
      RETRY_MAX_DELAY_MS: '200',
    });
    sql = new Pool({ connectionString: database.url, max: 2 });
    channel = await broker.openChannel();
    paymentQueue = `${broker.prefix}.order-saga.order-placed`;
    consoleBase = '/admin/dead-letters/console';
    browser = new FormBrowser(app.baseUrl);
    const exchange = `${broker.prefix}.events`;
    toFix = await plantPoisonOrder(sql, channel, exchange, 'console-fix');
    toPurge = await plantPoisonOrder(sql, channel, exchange, 'console-purge');
    await waitFor(
      'both poison orders dead-lettered',
      async () => (await broker.queueDepth(`${paymentQueue}.dlq`)) === 2,
      { timeoutMs: 20_000 },
    );
  });

  afterAll(async () => {
    await sql?.end();
    await ChildApp.killAll();
    await broker?.deleteByPrefix();
    await broker?.close();
    await database?.drop();
  });

  it('sends a browser that has not signed in to the sign-in form, and refuses a wrong token with 401', async () => {
    const overview = await browser.get(consoleBase);
    expect(overview.status).toBe(303);
    expect(overview.location).toBe(`${consoleBase}/sign-in`);

    const signIn = await browser.get(`${consoleBase}/sign-in`);
    expect(signIn.status).toBe(200);
    const wrong = await browser.post(`${consoleBase}/sign-in`, [
      ['_csrf', csrfOf(signIn)],
      ['token', 'x'.repeat(40)],
    ]);

    expect(wrong.status).toBe(401);
    expect(wrong.html).toContain('That token is not valid.');
  });

  it('signs in through the form with ADMIN_TOKEN and shows the overview', async () => {
    const signIn = await browser.get(`${consoleBase}/sign-in`);
    const signedIn = await browser.post(`${consoleBase}/sign-in`, [
      ['_csrf', csrfOf(signIn)],
      ['token', ADMIN_TOKEN],
    ]);

    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe(consoleBase);
    const overview = await browser.get(consoleBase);
    expect(overview.status).toBe(200);
    expect(overview.html).toContain('<h1>Overview</h1>');
    expect(overview.html).toContain(`${paymentQueue}.dlq`);
  });

  it('lists both dead letters of the payment queue, attempts exhausted', async () => {
    const list = await browser.get(`${consoleBase}/messages?queue=${encodeURIComponent(paymentQueue)}`);

    expect(list.status).toBe(200);
    expect(list.html).toContain(toFix.messageId);
    expect(list.html).toContain(toPurge.messageId);
    expect(list.html).toContain('attempts-exhausted');
  });

  it('replays the fixed body of one through the edit form: the order is paid and shipped, and one dead letter is left', async () => {
    const path = `${consoleBase}/messages/${encodeURIComponent(paymentQueue)}/${encodeURIComponent(toFix.messageId)}/edit`;
    const edit = await browser.get(path);
    expect(edit.status).toBe(200);

    const replayed = await browser.post(path, [
      ['_csrf', csrfOf(edit)],
      ['body', toFix.body(toFix.orderId).toString('utf8')],
      ['note', 'order id corrected'],
      ['action', 'replay'],
    ]);

    expect(replayed.status).toBe(303);
    expect(replayed.location).toMatch(new RegExp(`^${consoleBase}/audit\\?highlight=`));
    await waitFor(
      `order ${toFix.orderId} shipped`,
      async () =>
        (await sql.query<{ status: string }>('SELECT status FROM orders WHERE id = $1', [toFix.orderId]))
          .rows[0]?.status === 'shipped',
      { timeoutMs: 15_000 },
    );
    expect(await broker.queueDepth(`${paymentQueue}.dlq`)).toBe(1);
    const audit = await sql.query(
      "SELECT action, actor, outcome, details->>'note' AS note FROM rm_dead_letter_audit ORDER BY started_at",
    );
    expect(audit.rows).toEqual([
      // The wrong token of the first test, and the edit page that showed the body.
      { action: 'sign-in-failed', actor: expect.stringMatching(/^address:/), outcome: 'failed', note: null },
      { action: 'read', actor: 'token:admin', outcome: 'completed', note: null },
      { action: 'edit-replay', actor: 'token:admin', outcome: 'completed', note: 'order id corrected' },
    ]);
  });

  it('purges the other only after the dry run and its confirmation: the dead-letter queue is then empty', async () => {
    const preview = await browser.get(
      `${consoleBase}/purge?queue=${encodeURIComponent(paymentQueue)}&id=${encodeURIComponent(toPurge.messageId)}`,
    );
    expect(preview.status).toBe(200);
    expect(preview.html).toMatch(/Dry run: <b>1<\/b> dead letter\(s\) would be\s+purged/);
    const fields = hiddenFieldsOf(preview, `${consoleBase}/purge`);

    const unconfirmed = await browser.post(`${consoleBase}/purge`, fields);
    expect(unconfirmed.status).toBe(400);
    expect(await broker.queueDepth(`${paymentQueue}.dlq`)).toBe(1);

    const purged = await browser.post(`${consoleBase}/purge`, [...fields, ['confirm', 'yes']]);

    expect(purged.status).toBe(303);
    expect(await broker.queueDepth(`${paymentQueue}.dlq`)).toBe(0);
    const audit = await sql.query(
      "SELECT actor, outcome, message_count FROM rm_dead_letter_audit WHERE action = 'purge'",
    );
    expect(audit.rows).toEqual([{ actor: 'token:admin', outcome: 'completed', message_count: 1 }]);
  });

  it('still refuses a form post to the JSON API with 415, and still reads JSON bodies of the admin API', async () => {
    const order = await fetch(`${app.baseUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'customerId=c',
    });
    expect(order.status).toBe(415);

    const dryRun = await fetch(`${app.baseUrl}/admin/dead-letters/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({
        queue: paymentQueue,
        text: 'no dead letter says this',
        dryRun: true,
        allowEmpty: true,
      }),
    });
    expect(dryRun.status).toBe(200);
    expect(await dryRun.json()).toMatchObject({ dryRun: true, messageIds: [] });
  });
});
