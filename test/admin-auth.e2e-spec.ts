import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IsString } from 'class-validator';
import { Consume, MessagePublisher, MessageType, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { DeadLetterAdminModule, type DeadLetterAdminOptions } from 'nestjs-reliable-messaging-admin';
import { csrfOf, FormBrowser } from './support/form-browser';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'invoice.requested', idempotencyKey: (m: InvoiceRequested) => `invoice:${m.invoiceId}` })
class InvoiceRequested {
  @IsString() invoiceId!: string;
}

const OPERATOR_TOKEN = '3f9a1c7e52b84d06a9e1f37c58d2b40e6a7c19f3';
const VIEWER_TOKEN = 'Vw8qL2nX7rT4kP9zM1cB6yH3dG5fJ0sAe2Ru';
const SECRET = 'e41b9d0c7a3f58e26b1d4c9a07f3e85b2c6d1a94';
const OTHER_SECRET = '9c2e7a41d5b08f36e1a4c7d92b05f38e6a1d4c70';
const QUEUE = uniqueQueue('admin-auth');
const CONSOLE = '/admin/dead-letters/console';

@Injectable()
class InvoiceHandler {
  // NOTE: a classic queue, whose depth the broker reports at once (a quorum queue's lags).
  @Consume({ queue: QUEUE, queueType: 'classic', retry: { maxAttempts: 1 } })
  async onInvoice(event: InvoiceRequested): Promise<void> {
    throw new Error(`the ledger refused invoice ${event.invoiceId}`);
  }
}

interface AuditRow {
  action: string;
  actor: string;
  queue: string | null;
  selection: Record<string, unknown>;
  message_ids: string[];
  outcome: string;
}

describe('admin authentication: roles, refused tokens, revocable sessions shared by replicas, audited reads', () => {
  let broker: TestBroker;
  let db: MessagingDatabase;
  const apps: Array<INestApplication<Server>> = [];
  /** Replica A consumes the queue; B shares its session secret, C has another. */
  let originA: string;
  let originB: string;
  let originC: string;
  let messageId: string;

  async function startReplica(
    name: string,
    admin: Partial<DeadLetterAdminOptions>,
    consumes: boolean,
  ): Promise<string> {
    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange: broker.name('events'),
          connectionName: `${broker.prefix}.${name}`,
          dataSource: db.dataSource,
        }),
        DeadLetterAdminModule.register({
          tokens: { ops: OPERATOR_TOKEN, support: { token: VIEWER_TOKEN, role: 'viewer' } },
          console: true,
          ...admin,
        }),
      ],
      providers: consumes ? [InvoiceHandler] : [],
    })
    class ReplicaModule {}

    const app = await NestFactory.create<INestApplication<Server>>(ReplicaModule, {
      logger: false,
      abortOnError: false,
    });
    apps.push(app);
    await app.listen(0, '127.0.0.1');
    return `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    broker = await TestBroker.connect();
    broker.track(QUEUE, `${QUEUE}.dlq`);
    db = await createMessagingDatabase([], { admin: true });
    originA = await startReplica('a', { consoleSessionSecret: SECRET }, true);
    originB = await startReplica('b', { consoleSessionSecret: SECRET }, false);
    originC = await startReplica('c', { consoleSessionSecret: OTHER_SECRET }, false);

    const receipt = await apps[0]
      .get(MessagePublisher)
      .publishNow(Object.assign(new InvoiceRequested(), { invoiceId: 'inv-1' }));
    messageId = receipt.messageId;
    await waitFor('the invoice dead-lettered', async () => (await broker.queueDepth(`${QUEUE}.dlq`)) === 1);
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
    await db?.drop();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  async function api(
    origin: string,
    method: 'GET' | 'POST',
    path: string,
    token: string,
    body?: unknown,
  ): Promise<{ status: number; retryAfter: string | null; json: Record<string, unknown> }> {
    const response = await fetch(`${origin}/admin/dead-letters/${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      json: (await response.json()) as Record<string, unknown>,
    };
  }

  async function auditRows(action: string): Promise<AuditRow[]> {
    return db.dataSource.query<AuditRow[]>(
      `SELECT "action", "actor", "queue", "selection", "message_ids", "outcome" FROM "rm_dead_letter_audit" ` +
        `WHERE "action" = $1 ORDER BY "started_at"`,
      [action],
    );
  }

  it("lets a viewer's token list and show, refuses it replay, edit, purge, retry and discard with 403, and touches nothing", async () => {
    const list = await api(originA, 'GET', `messages?queue=${encodeURIComponent(QUEUE)}`, VIEWER_TOKEN);
    expect(list.status).toBe(200);
    expect(list.json.deadLetters).toHaveLength(1);

    for (const [path, body] of [
      ['replay', { queue: QUEUE, all: true }],
      ['purge', { queue: QUEUE, all: true, confirm: true }],
      [
        `messages/${encodeURIComponent(QUEUE)}/${encodeURIComponent(messageId)}/edit`,
        { body: { invoiceId: 'x' } },
      ],
      ['outbox/retry', { all: true }],
      ['outbox/discard', { all: true, confirm: true }],
    ] as const) {
      const refused = await api(originA, 'POST', path, VIEWER_TOKEN, body);
      expect({ path, status: refused.status }).toEqual({ path, status: 403 });
    }
    expect(await broker.queueDepth(`${QUEUE}.dlq`)).toBe(1);
    expect(await auditRows('purge')).toEqual([]);
    expect(await auditRows('replay')).toEqual([]);

    const dryRun = await api(originA, 'POST', 'replay', OPERATOR_TOKEN, {
      queue: QUEUE,
      all: true,
      dryRun: true,
    });
    expect(dryRun.status).toBe(200);
  });

  it('audits a show of a dead letter in full as a read: actor, queue and message id', async () => {
    const show = await api(
      originA,
      'GET',
      `messages/${encodeURIComponent(QUEUE)}/${encodeURIComponent(messageId)}`,
      VIEWER_TOKEN,
    );
    expect(show.status).toBe(200);

    expect(await auditRows('read')).toEqual([
      {
        action: 'read',
        actor: 'token:support',
        queue: QUEUE,
        selection: { queue: QUEUE },
        message_ids: [messageId],
        outcome: 'completed',
      },
    ]);
  });

  it('signs a viewer in to the console: it reads a message (audited) without action links, and gets 403 on the pages and forms that act', async () => {
    const viewer = new FormBrowser(originA);
    expect((await viewer.signIn(CONSOLE, VIEWER_TOKEN)).status).toBe(303);
    const page = await viewer.get(
      `${CONSOLE}/messages/${encodeURIComponent(QUEUE)}/${encodeURIComponent(messageId)}`,
    );
    expect(page.status).toBe(200);
    expect(page.html).toContain(messageId);
    expect(page.html).not.toContain('Purge…');
    expect((await auditRows('read')).at(-1)).toMatchObject({
      actor: 'token:support',
      message_ids: [messageId],
    });

    expect((await viewer.get(`${CONSOLE}/replay?queue=${encodeURIComponent(QUEUE)}`)).status).toBe(403);
    const purge = await viewer.post(`${CONSOLE}/purge`, [
      ['_csrf', csrfOf(page)],
      ['queue', QUEUE],
      ['all', 'yes'],
      ['confirm', 'yes'],
    ]);
    expect(purge.status).toBe(403);
    expect(await broker.queueDepth(`${QUEUE}.dlq`)).toBe(1);
  });

  it('accepts a session on a replica with the same consoleSessionSecret, and sends it to sign in on one with another', async () => {
    const browser = new FormBrowser(originA);
    expect((await browser.signIn(CONSOLE, OPERATOR_TOKEN)).status).toBe(303);

    const onB = await browser.at(originB).get(CONSOLE);
    expect(onB.status).toBe(200);
    expect(onB.html).toContain('<h1>Overview</h1>');
    const onC = await browser.at(originC).get(CONSOLE);
    expect(onC.status).toBe(303);
    expect(onC.location).toBe(`${CONSOLE}/sign-in`);
  });

  it('refuses the cookie of a signed-out session afterwards, on this replica and on the others', async () => {
    const browser = new FormBrowser(originA);
    expect((await browser.signIn(CONSOLE, OPERATOR_TOKEN)).status).toBe(303);
    const kept = browser.at(originA);
    const overview = await browser.get(CONSOLE);
    expect(overview.status).toBe(200);

    const signedOut = await browser.post(`${CONSOLE}/sign-out`, [['_csrf', csrfOf(overview)]]);
    expect(signedOut.status).toBe(303);

    for (const replica of [kept, kept.at(originB)]) {
      const again = await replica.get(CONSOLE);
      expect(again.status).toBe(303);
      expect(again.location).toBe(`${CONSOLE}/sign-in`);
    }
  });

  it('answers the sixth wrong bearer token from one address with 429 and Retry-After, even with the right token then, and audits each refusal with the address', async () => {
    for (let attempt = 1; attempt <= 5; attempt++) {
      const wrong = await api(originC, 'GET', 'queues', `${OPERATOR_TOKEN.slice(0, -2)}${attempt}0`);
      expect(wrong.status).toBe(401);
    }
    const held = await api(originC, 'GET', 'queues', OPERATOR_TOKEN);
    expect(held.status).toBe(429);
    expect(Number(held.retryAfter)).toBeGreaterThan(0);

    const refusals = await auditRows('token-refused');
    expect(refusals).toHaveLength(5);
    expect(refusals[0]).toMatchObject({
      actor: expect.stringMatching(/^address:.*127\.0\.0\.1$/),
      selection: { address: expect.stringMatching(/127\.0\.0\.1$/) },
      outcome: 'failed',
    });
    expect(JSON.stringify(refusals)).not.toContain(OPERATOR_TOKEN.slice(0, 20));
    // Another replica keeps its own count: the limit is per process.
    expect((await api(originA, 'GET', 'queues', OPERATOR_TOKEN)).status).toBe(200);
  });

  it('answers the sixth wrong console sign-in from one address with 429, and audits each as sign-in-failed', async () => {
    const browser = new FormBrowser(originB);
    for (let attempt = 1; attempt <= 5; attempt++) {
      expect((await browser.signIn(CONSOLE, `${VIEWER_TOKEN.slice(0, -1)}${attempt}`)).status).toBe(401);
    }
    const held = await browser.signIn(CONSOLE, VIEWER_TOKEN);
    expect(held.status).toBe(429);
    expect(Number(held.retryAfter)).toBeGreaterThan(0);
    expect(await auditRows('sign-in-failed')).toHaveLength(5);
  });
});
