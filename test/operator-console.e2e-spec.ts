import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IsInt, IsString, Min } from 'class-validator';
import type { Page } from 'playwright-core';
import { Consume, MessagePublisher, MessageType, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { DeadLetterAdminModule } from 'nestjs-reliable-messaging-admin';
import { launchChromium, type HeadlessChromium } from '../apps/order-service/src/demo/headless-chromium';
import { createMessagingDatabase, outboxRows, type MessagingDatabase } from './support/messaging-database';
import { uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'refund.requested', idempotencyKey: (m: RefundRequested) => `refund:${m.refundId}` })
class RefundRequested {
  @IsString() refundId!: string;
  @IsInt() @Min(1) amountCents!: number;
}

class BankRejected extends Error {}

const TOKEN = '76edd7f4b8e2689f975eafdd8b740a2ba4602ce5';
const QUEUE = uniqueQueue('console');
const DLQ = `${QUEUE}.dlq`;
const SCRIPT_BODY = '<script>window.__pwned=1</script>';
const HTML_HEADER = '<img src=x onerror="window.__pwned=2">';
const PARKED_SCRIPT = '<script>window.__pwned2=1</script>';
const PARCEL_KEY = 'parcel-<7>';

@Injectable()
class RefundHandler {
  readonly refunded: string[] = [];
  bankDown = true;
  /** While set, the refund `slow` waits for it: a handler in flight. */
  hold?: Promise<void>;
  holding = false;

  // NOTE: a classic queue, whose depth the broker reports at once (a quorum queue's lags).
  @Consume({ queue: QUEUE, queueType: 'classic', retry: { maxAttempts: 1 } })
  async onRefund(event: RefundRequested): Promise<void> {
    if (this.bankDown) throw new BankRejected(`the bank rejected refund ${event.refundId}`);
    if (event.refundId === 'slow' && this.hold) {
      this.holding = true;
      await this.hold;
    }
    this.refunded.push(event.refundId);
  }
}

describe('the operator console in a browser: sign in, overview, filter, show, edit, replay, purge, audit', () => {
  let broker: TestBroker;
  let db: MessagingDatabase;
  let app: INestApplication<Server>;
  let browser: HeadlessChromium;
  let page: Page;
  let consoleUrl: string;
  let handler: RefundHandler;
  /** The message id of each refund published. */
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    broker = await TestBroker.connect();
    broker.track(QUEUE, DLQ);
    db = await createMessagingDatabase([], { admin: true });

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange: broker.name('events'),
          connectionName: `${broker.prefix}.console`,
          dataSource: db.dataSource,
          outbox: { pollIntervalMs: 100 },
        }),
        DeadLetterAdminModule.register({ tokens: { ops: TOKEN }, console: true }),
      ],
      providers: [RefundHandler],
    })
    class ConsoleSpecModule {}

    app = await NestFactory.create(ConsoleSpecModule, { logger: false, abortOnError: false });
    await app.listen(0, '127.0.0.1');
    consoleUrl = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/admin/dead-letters/console`;
    handler = app.get(RefundHandler);

    const publisher = app.get(MessagePublisher);
    for (const [refundId, amountCents] of [
      ['r-1', 100],
      ['r-2', 200],
      ['r-3', 300],
      ['r-4', 400],
      ['bad-amount', 0],
    ] as const) {
      const receipt = await publisher.publishNow(
        Object.assign(new RefundRequested(), { refundId, amountCents }),
      );
      ids[refundId] = receipt.messageId;
    }
    await broker.publishRaw({ queue: DLQ }, SCRIPT_BODY, {
      messageId: 'hostile-1',
      type: 'refund.requested',
      contentType: 'text/plain',
      headers: {
        'x-html': HTML_HEADER,
        [DEAD_LETTER_HEADERS.queue]: QUEUE,
        [DEAD_LETTER_HEADERS.reason]: '<b>odd</b>',
        [DEAD_LETTER_HEADERS.errorClass]: 'Evil<script>',
        [DEAD_LETTER_HEADERS.errorMessage]: `\u001b[31m${HTML_HEADER}`,
        [DEAD_LETTER_HEADERS.lastFailureAt]: new Date().toISOString(),
      },
    });
    await waitFor('six dead letters', async () => (await broker.queueDepth(DLQ)) === 6);

    browser = await launchChromium();
    page = await browser.context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await db?.drop();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  /** Waits until `selector` holds `text` (Playwright retries until it does). */
  async function shows(selector: string, text: string | RegExp): Promise<void> {
    await page.locator(selector).filter({ hasText: text }).first().waitFor({ timeout: 5000 });
  }

  it('sends a browser that has not signed in to the sign-in form, refuses a wrong token, and signs in with a cookie session', async () => {
    const first = await page.goto(consoleUrl);
    expect(page.url()).toBe(`${consoleUrl}/sign-in`);
    const headers = first!.headers();
    expect(headers['content-security-policy']).toContain("script-src 'self'");
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers).toMatchObject({
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
    });

    await page.fill('input[name=token]', 'x'.repeat(32));
    await page.click('button[type=submit]');
    await shows('.notice.error', 'That token is not valid.');

    await page.fill('input[name=token]', TOKEN);
    await page.click('button[type=submit]');
    await shows('h1', 'Overview');
    expect(page.url()).toBe(consoleUrl);
    const [cookie] = await browser.context.cookies();
    expect(cookie).toMatchObject({ name: 'rm_console', httpOnly: true, sameSite: 'Strict' });
    expect(cookie.value).not.toContain(TOKEN);
  });

  it('shows the figures of the consumer queue and of its dead-letter queue, with counts by reason', async () => {
    await shows('#consumer-queues tr', QUEUE);
    const consumerRow = page.locator('#consumer-queues tbody tr', { hasText: QUEUE });
    expect(await consumerRow.locator('td').allInnerTexts()).toEqual([
      QUEUE,
      '0',
      '1',
      '0',
      '–',
      'empty',
      '6',
    ]);
    expect(await page.locator('[data-figure=parked-outbox-rows]').innerText()).toBe('0');
    const deadRow = page.locator('#dead-letter-queues tbody tr', { hasText: DLQ });
    expect(await deadRow.locator('td').nth(1).innerText()).toBe('6');
    const chips = await deadRow.locator('.chip').allInnerTexts();
    expect(chips).toEqual(['attempts-exhausted 4', '<b>odd</b> 1', 'validation-failed 1']);
    expect(await page.locator('[data-figure=dead-letters]').innerText()).toBe('6');
  });

  it('filters the list as the command line does', async () => {
    await page.click('nav >> text=Dead letters');
    await page.fill('input[name=errorClass]', 'BankRejected');
    await page.click('form.filters button[type=submit]');
    await shows('#list-summary', '4 dead letter(s)');
    const listed = await page.locator('#dead-letters tbody tr td:nth-child(4)').allInnerTexts();
    expect(listed.sort()).toEqual([ids['r-1'], ids['r-2'], ids['r-3'], ids['r-4']].sort());
    expect(page.url()).toContain('errorClass=BankRejected');

    await page.fill('input[name=errorClass]', 'NoSuchError');
    await page.click('form.filters button[type=submit]');
    await shows('#list-summary', '0 dead letter(s)');
  });

  it('renders hostile bodies, headers and reasons as text, and runs no script of theirs', async () => {
    await page.goto(`${consoleUrl}/messages/${encodeURIComponent(QUEUE)}/hostile-1`);
    await shows('#body', SCRIPT_BODY);
    await shows('#headers', HTML_HEADER);
    await shows('dl.facts', '\u241b[31m');
    await shows('dl.facts', 'Evil<script>');
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('#body script, #headers img, dl.facts img').count()).toBe(0);

    await page.goto(`${consoleUrl}/messages`);
    await shows('#dead-letters', HTML_HEADER);
    await page.goto(consoleUrl);
    await shows('#dead-letter-queues', '<b>odd</b>');
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it('opens one message with its failure history and stack, refuses an invalid edit with the class message, and replays a valid one', async () => {
    await page.goto(`${consoleUrl}/messages?errorClass=BankRejected`);
    await page.click(`#dead-letters a:text-is("${ids['r-1']}")`);
    await shows('h1', `Dead letter ${ids['r-1']}`);
    await shows(
      '#history',
      'attempts-exhausted after 1 attempt(s): BankRejected: the bank rejected refund r-1',
    );
    await shows('#stack', 'the bank rejected refund');
    await shows('#body', '"amountCents": 100');

    await page.click('text=Edit body and replay…');
    await page.fill('textarea[name=body]', '{"refundId":"r-1","amountCents":0}');
    await page.click('button[value=replay]');
    await shows('.notice.error', 'amountCents: amountCents must not be less than 1');
    expect(await broker.queueDepth(DLQ)).toBe(6);

    handler.bankDown = false;
    await page.fill('textarea[name=body]', '{"refundId":"r-1-fixed","amountCents":150}');
    await page.click('button[value=check]');
    await shows('.notice.ok', 'The body is valid');
    await page.fill('input[name=note]', 'amount corrected');
    await page.click('button[value=replay]');
    await shows('h1', 'Audit log');
    await shows('tr.highlight', 'edit-replay');
    await waitFor('the edited refund', () => handler.refunded.includes('r-1-fixed'));
    expect(await broker.queueDepth(DLQ)).toBe(5);
  });

  it('replays a selection after a dry-run preview, and the consumer handles it', async () => {
    await page.goto(`${consoleUrl}/messages?errorClass=BankRejected`);
    await page.check(`input[name=id][value="${ids['r-2']}"]`);
    await page.check(`input[name=id][value="${ids['r-3']}"]`);
    await page.click('text=Replay selected…');
    await shows('#preview-summary', 'Dry run: 2 dead letter(s) would be replayed');
    expect((await page.locator('#preview-ids li').allInnerTexts()).sort()).toEqual(
      [ids['r-2'], ids['r-3']].sort(),
    );
    expect(await broker.queueDepth(DLQ)).toBe(5);

    await page.click('text=Replay 2 now');
    await shows('tr.highlight', 'replay');
    await waitFor('r-2 and r-3 refunded', () => ['r-2', 'r-3'].every((id) => handler.refunded.includes(id)));
    expect(await broker.queueDepth(DLQ)).toBe(3);
  });

  it('refuses a POST without the CSRF token with 403, and purges nothing', async () => {
    const withoutToken = await page.request.post(`${consoleUrl}/purge`, {
      form: { queue: QUEUE, all: '1', confirm: 'yes' },
      maxRedirects: 0,
    });
    expect(withoutToken.status()).toBe(403);
    expect(withoutToken.headers()['content-security-policy']).toContain("default-src 'none'");
    const withWrongToken = await page.request.post(`${consoleUrl}/purge`, {
      form: { queue: QUEUE, all: '1', confirm: 'yes', _csrf: 'x'.repeat(43) },
      maxRedirects: 0,
    });
    expect(withWrongToken.status()).toBe(403);
    expect(await broker.queueDepth(DLQ)).toBe(3);
  });

  it('purges only after confirmation: cancelling purges nothing', async () => {
    await page.goto(`${consoleUrl}/messages?queue=${encodeURIComponent(QUEUE)}`);
    await page.click('text=Purge every match…');
    await shows('#preview-summary', 'Dry run: 3 dead letter(s) would be purged');
    await page.click('text=Cancel');
    await shows('h1', 'Dead letters');
    expect(await broker.queueDepth(DLQ)).toBe(3);

    await page.click('text=Purge every match…');
    await page.check('input[name=confirm]');
    await page.click('text=Purge 3 for good');
    await shows('tr.highlight', 'purge');
    expect(await broker.queueDepth(DLQ)).toBe(0);
  });

  it('shows a handler in flight, the handled rate and the age of the oldest message of a consumer queue', async () => {
    let release!: () => void;
    handler.hold = new Promise((resolve) => (release = resolve));
    await app
      .get(MessagePublisher)
      .publishNow(Object.assign(new RefundRequested(), { refundId: 'slow', amountCents: 1 }));
    await waitFor('the slow refund in its handler', () => handler.holding);
    const cells = page.locator('#consumer-queues tbody tr', { hasText: QUEUE }).locator('td');
    await waitFor('an age of a second or more', async () => {
      await page.goto(consoleUrl);
      return /^[1-9]\d*s$/.test(await cells.nth(5).innerText());
    });
    expect(await cells.nth(3).innerText()).toBe('1');
    expect(await cells.nth(4).innerText()).toMatch(/^\d+(\.\d)?$/);
    release();
    await waitFor('the slow refund', () => handler.refunded.includes('slow'));
  });

  /** Waits until the relay parks the row of `type`, and answers its row. */
  async function parked(type: string) {
    let found: Awaited<ReturnType<typeof outboxRows>>[number] | undefined;
    await waitFor(`${type} parked`, async () => {
      found = (await outboxRows(db.dataSource)).find((row) => row.type === type && row.status === 'parked');
      return found !== undefined;
    });
    return found!;
  }

  it('lists a parked outbox row as holding back the later row of its key, and retries it after a dry run: both arrive in key order', async () => {
    const PARCELS = broker.name('parcels');
    const channel = await broker.openChannel();
    await channel.assertQueue(PARCELS, { durable: false });
    await channel.bindQueue(PARCELS, broker.name('events'), 'parcel.later');
    const publisher = app.get(MessagePublisher);
    await db.dataSource.transaction(async (manager) => {
      for (const [type, name] of [
        ['parcel.first', 'first'],
        ['parcel.later', 'later'],
      ])
        await publisher.publish(
          { type, payload: { name }, idempotencyKey: `parcel-${name}` },
          { manager, orderingKey: PARCEL_KEY },
        );
      await publisher.publish(
        { type: 'hostile.parked', payload: { note: PARKED_SCRIPT }, idempotencyKey: 'hostile-parked' },
        { manager },
      );
    });
    const first = await parked('parcel.first');
    await parked('hostile.parked');

    await page.goto(consoleUrl);
    expect(await page.locator('[data-figure=parked-outbox-rows]').innerText()).toBe('2');
    await page.click('nav >> text=Parked outbox rows');
    await shows('#outbox-summary', '2 parked row(s) in row order, holding back 1 later row(s)');
    const row = page.locator('#parked-rows tbody tr', { hasText: 'parcel.first' });
    expect(await row.locator('.holding-back').innerText()).toBe(
      `holding back 1 later row(s) of key ${PARCEL_KEY}`,
    );
    expect(await page.locator('#parked-rows .holding-back').count()).toBe(1);
    expect(await row.locator('td').nth(5).innerText()).toMatch(/^unroutable: /);
    expect((await outboxRows(db.dataSource)).find((r) => r.type === 'parcel.later')?.status).toBe('pending');

    await row.locator(`a:text-is("${first.messageId}")`).click();
    await shows('h1', `Parked outbox row ${first.id}`);
    await shows('.notice.error', `holding back 1 later row(s) of key ${PARCEL_KEY}`);
    await shows('#body', '"name":"first"');

    await channel.bindQueue(PARCELS, broker.name('events'), 'parcel.first');
    await page.click('text=Retry…');
    await shows('#preview-summary', 'Dry run: 1 parked outbox row(s) would be put back for the relay');
    expect(await page.locator('#preview-ids li').allInnerTexts()).toEqual([first.messageId]);
    expect((await outboxRows(db.dataSource)).find((r) => r.id === first.id)?.status).toBe('parked');

    await page.click('text=Retry 1 now');
    await shows('tr.highlight', 'outbox-retry');
    await shows('.notice.ok', 'outbox-retry: 1 parked outbox row(s), completed.');
    const delivered = await broker.waitForMessages(PARCELS, 2);
    expect(delivered.map((m) => (JSON.parse(m.content.toString()) as { name: string }).name)).toEqual([
      'first',
      'later',
    ]);
  });

  it('renders a hostile parked body as text, and discards the row only after confirmation', async () => {
    await page.goto(`${consoleUrl}/outbox?type=hostile.parked`);
    await shows('#outbox-summary', '1 parked row(s)');
    await page.click('#parked-rows tbody a');
    await shows('#body', PARKED_SCRIPT);
    expect(await page.locator('#body script').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __pwned2?: number }).__pwned2)).toBeUndefined();

    await page.click('text=Discard…');
    await shows('#preview-summary', 'Dry run: 1 parked outbox row(s) would be discarded');
    await page.click('text=Cancel');
    await shows('h1', 'Parked outbox rows');
    await parked('hostile.parked');

    await page.goto(`${consoleUrl}/outbox?type=hostile.parked`);
    await page.click('text=Discard every match…');
    await page.click('text=Discard 1 for good');
    expect(await page.locator('input[name=confirm]:invalid').count()).toBe(1);
    await page.check('input[name=confirm]');
    await page.click('text=Discard 1 for good');
    await shows('tr.highlight', 'outbox-discard');
    expect((await outboxRows(db.dataSource)).filter((r) => r.status === 'parked')).toEqual([]);
    await page.goto(`${consoleUrl}/outbox`);
    await shows('#outbox-summary', '0 parked row(s)');
    expect(await page.evaluate(() => (globalThis as { __pwned2?: number }).__pwned2)).toBeUndefined();
  });

  it('lists every action in the audit log under the token name, and signs out', async () => {
    await page.click('nav >> text=Audit log');
    const rows = page.locator('#audit tbody tr');
    const all = await Promise.all(
      Array.from({ length: await rows.count() }, async (_, i) =>
        (await rows.nth(i).locator('td').allInnerTexts()).slice(1, 6),
      ),
    );
    // Beside the actions: the pages that showed a body in full (read), and the wrong token of the first test.
    const [reads, refusals] = [
      all.filter(([a]) => a === 'read'),
      all.filter(([a]) => a === 'sign-in-failed'),
    ];
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.every(([, actor]) => actor === 'token:ops')).toBe(true);
    expect(refusals).toHaveLength(1);
    const cells = (i: number) => all.filter(([a]) => a !== 'read' && a !== 'sign-in-failed')[i];
    expect(all.length - reads.length - refusals.length).toBe(5);
    expect(cells(0)).toEqual(['outbox-discard', 'token:ops', 'outbox', '1', 'completed']);
    expect(cells(1)).toEqual(['outbox-retry', 'token:ops', 'outbox', '1', 'completed']);
    expect(cells(2)).toEqual(['purge', 'token:ops', QUEUE, '3', 'completed']);
    expect(cells(3)).toEqual(['replay', 'token:ops', '–', '2', 'completed']);
    expect(cells(4)).toEqual(['edit-replay', 'token:ops', QUEUE, '1', 'completed']);
    await shows('#audit', 'amount corrected');

    const [kept] = await browser.context.cookies();
    await page.click('text=Sign out');
    await shows('h1', 'Dead-letter console');
    await page.goto(`${consoleUrl}/audit`);
    expect(page.url()).toBe(`${consoleUrl}/sign-in`);
    // The cookie of the signed-out session, put back as a thief who copied it would: revoked, it is refused.
    await browser.context.addCookies([kept]);
    await page.goto(`${consoleUrl}/audit`);
    expect(page.url()).toBe(`${consoleUrl}/sign-in`);
  });
});
