import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IsInt, IsString, Min } from 'class-validator';
import {
  MessagePublisher,
  MessageType,
  ReliableMessagingModule,
  Saga,
  SagaInstances,
  SagaStep,
  type SagaContext,
} from 'nestjs-reliable-messaging';
import { ConsumerRegistry, delayLevelNames, deliverExchangeName } from 'nestjs-reliable-messaging/operations';
import { DeadLetterAdminModule } from 'nestjs-reliable-messaging-admin';
import { runDeadLetterCli } from 'nestjs-reliable-messaging-admin/cli';
import { csrfOf, FormBrowser } from './support/form-browser';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

const OPS_TOKEN = '5b0c2f9e81d64a37be1f0c2d9a8e7f6b5c4d3e2f';
const VIEWER_TOKEN = 'e3f1a9c7b5d2e8f4a6c0b9d7e5f3a1c8b6d4e2f0';
const HOSTILE = '<script>window.__pwned=1</script>';
/** Characters of padding in the big instance's state: more than the tools show (16,384). */
const PADDING = 40_000;
const HOUR = 3_600_000;

@MessageType({ type: 'reminder.due', idempotencyKey: (m: ReminderDue) => m.key })
class ReminderDue {
  @IsString() key!: string;
}

@MessageType({ type: 'shipment.requested', idempotencyKey: (m: ShipmentRequested) => `placed:${m.orderId}` })
class ShipmentRequested {
  @IsString() orderId!: string;
  @IsString() note!: string;
  @IsInt() @Min(0) padding!: number;
}

@MessageType({
  type: 'shipment.delivered',
  idempotencyKey: (m: ShipmentDelivered) => `delivered:${m.orderId}`,
})
class ShipmentDelivered {
  @IsString() orderId!: string;
}

@MessageType({ type: 'shipment.overdue', idempotencyKey: (m: ShipmentOverdue) => `overdue:${m.orderId}` })
class ShipmentOverdue {
  @IsString() orderId!: string;
}

interface ShipmentState {
  note: string;
  padding: string;
  delivered: boolean;
}

const SAGA = uniqueQueue('shipment');

/** Requested starts an instance (its state from the publisher's data) and asks for a timeout an hour ahead; delivered completes it. */
@Saga({
  name: SAGA,
  initialState: (): ShipmentState => ({ note: '', padding: '', delivered: false }),
})
class ShipmentSaga {
  @SagaStep(ShipmentRequested, { correlate: (m) => m.orderId, onMissing: 'start', queueType: 'classic' })
  async onRequested(event: ShipmentRequested, saga: SagaContext<ShipmentState>): Promise<void> {
    saga.state.note = event.note;
    saga.state.padding = 'p'.repeat(event.padding);
    await saga.requestTimeout(Object.assign(new ShipmentOverdue(), { orderId: event.orderId }), {
      delayMs: HOUR,
    });
  }

  @SagaStep(ShipmentDelivered, { correlate: (m) => m.orderId, queueType: 'classic' })
  onDelivered(_event: ShipmentDelivered, saga: SagaContext<ShipmentState>): void {
    saga.state.delivered = true;
    saga.complete();
  }

  @SagaStep(ShipmentOverdue, { correlate: (m) => m.orderId, queueType: 'classic' })
  onOverdue(_event: ShipmentOverdue, saga: SagaContext<ShipmentState>): void {
    saga.complete();
  }
}

/** Collects what the command line writes. */
class Capture extends Writable {
  text = '';
  isTTY = false;
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

interface AuditRow {
  action: string;
  actor: string;
  outcome: string;
  selection: Record<string, unknown>;
  message_ids: string[];
  details: Record<string, unknown>;
}

describe('scheduled messages and saga instances in the operator tools: the command line, the admin API and the console', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: INestApplication<Server>;
  let origin: string;
  const API = '/admin/dead-letters';
  const CONSOLE = '/admin/dead-letters/console';
  /** The message id of each scheduled reminder, by its key. */
  const reminders: Record<string, string> = {};

  beforeAll(async () => {
    db = await createMessagingDatabase([], { admin: true });
    broker = await TestBroker.connect();
    const exchange = broker.name('events');
    broker.track(
      exchange,
      `${exchange}.dead-letter`,
      ...delayLevelNames(exchange),
      deliverExchangeName(exchange),
    );

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange,
          connectionName: `${broker.prefix}.scheduled-sagas`,
          dataSource: db.dataSource,
          outbox: { pollIntervalMs: 100 },
        }),
        DeadLetterAdminModule.register({
          tokens: { ops: OPS_TOKEN, support: { token: VIEWER_TOKEN, role: 'viewer' } },
          console: true,
        }),
      ],
      providers: [ShipmentSaga],
    })
    class ScheduledSagasSpecModule {}

    app = await NestFactory.create(ScheduledSagasSpecModule, { logger: false, abortOnError: false });
    await app.listen(0, '127.0.0.1');
    for (const consumer of app.get(ConsumerRegistry).consumers)
      broker.track(consumer.queue, consumer.deadLetterQueue);
    origin = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;

    const publisher = app.get(MessagePublisher);
    for (const [key, delayMs] of [
      ['soon-1', 10 * 60_000],
      [HOSTILE, 20 * 60_000],
      ['later-1', 2 * HOUR],
    ] as const) {
      const receipt = await db.dataSource.transaction((manager) =>
        publisher.publish(Object.assign(new ReminderDue(), { key }), { manager, delayMs }),
      );
      reminders[key] = receipt.messageId;
    }

    const instances = app.get(SagaInstances);
    const requested = (orderId: string, padding: number) =>
      Object.assign(new ShipmentRequested(), { orderId, note: HOSTILE, padding });
    await publisher.publishNow(requested('o-1', 10));
    await publisher.publishNow(requested('o-2', PADDING));
    await waitFor('both instances started', async () => {
      const [one, two] = await Promise.all([instances.find(SAGA, 'o-1'), instances.find(SAGA, 'o-2')]);
      return one?.version === 1 && two?.version === 1;
    });
    await publisher.publishNow(Object.assign(new ShipmentDelivered(), { orderId: 'o-1' }));
    await waitFor('o-1 completed', async () => (await instances.find(SAGA, 'o-1'))?.status === 'completed');
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  async function dlq(
    args: string[],
    confirm?: (question: string) => Promise<string>,
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    const stdout = new Capture();
    const stderr = new Capture();
    const code = await runDeadLetterCli(app, ['node', 'dlq', ...args], {
      stdout,
      stderr,
      actor: 'spec-user',
      confirm,
    });
    return { code, stdout: stdout.text, stderr: stderr.text };
  }

  async function call(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    token = OPS_TOKEN,
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const response = await fetch(`${origin}${API}/${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  }

  async function audits(action: string): Promise<AuditRow[]> {
    return db.dataSource.query<AuditRow[]>(
      `SELECT action, actor, outcome, selection, message_ids, details FROM rm_dead_letter_audit ` +
        `WHERE action = $1 ORDER BY started_at, id`,
      [action],
    );
  }

  async function scheduledIds(): Promise<string[]> {
    const rows = await db.dataSource.query<Array<{ message_id: string }>>(
      `SELECT message_id FROM rm_scheduled WHERE properties->>'type' = 'reminder.due' ORDER BY deliver_at`,
    );
    return rows.map((row) => row.message_id);
  }

  describe('scheduled messages', () => {
    it('the command line lists them the first due first, filtered by type and due time, a page at a time', async () => {
      const listed = await dlq(['scheduled', 'list', '--type', 'reminder.due']);
      expect(listed).toMatchObject({ code: 0, stderr: '' });
      expect(listed.stdout).toMatch(/DUE\s+MESSAGE ID\s+TYPE\s+IDEMPOTENCY KEY\s+ROUTING KEY\s+ORDERING KEY/);
      expect(listed.stdout).toContain('3 scheduled message(s)');
      const order = ['soon-1', HOSTILE, 'later-1'].map((key) => listed.stdout.indexOf(reminders[key]));
      expect(order.every((at) => at > 0)).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);

      const soon = await dlq([
        'scheduled',
        'list',
        '--type',
        'reminder.due',
        '--due-before',
        '30m',
        '--json',
      ]);
      const soonRows = (JSON.parse(soon.stdout) as { rows: Array<{ messageId: string }> }).rows;
      expect(soonRows.map((row) => row.messageId)).toEqual([reminders['soon-1'], reminders[HOSTILE]]);

      const first = JSON.parse(
        (await dlq(['scheduled', 'list', '--type', 'reminder.due', '--limit', '2', '--json'])).stdout,
      ) as { rows: Array<{ messageId: string }>; more: boolean; next: string };
      expect(first).toMatchObject({ more: true, next: expect.any(String) });
      const second = JSON.parse(
        (await dlq(['scheduled', 'list', '--type', 'reminder.due', '--after', first.next, '--json'])).stdout,
      ) as { rows: Array<{ messageId: string }>; more: boolean };
      expect(second).toMatchObject({ more: false });
      expect([...first.rows, ...second.rows].map((row) => row.messageId)).toEqual([
        reminders['soon-1'],
        reminders[HOSTILE],
        reminders['later-1'],
      ]);

      const wrong = await dlq(['scheduled', 'list', '--due-before', 'tomorrow']);
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toContain("'dueBefore' must be an ISO 8601 time");
    });

    it("the admin API lists them to a viewer, refuses a viewer's cancel, and cancels for an operator, audited", async () => {
      const listed = await call('GET', 'scheduled/rows?type=reminder.due&limit=2', undefined, VIEWER_TOKEN);
      expect(listed.status).toBe(200);
      expect(listed.json).toMatchObject({ more: true, next: expect.any(String) });
      expect((listed.json.rows as Array<{ messageId: string }>).map((row) => row.messageId)).toEqual([
        reminders['soon-1'],
        reminders[HOSTILE],
      ]);

      const refused = await call(
        'POST',
        'scheduled/cancel',
        { messageId: reminders['later-1'], confirm: true },
        VIEWER_TOKEN,
      );
      expect(refused.status).toBe(403);
      const unconfirmed = await call('POST', 'scheduled/cancel', { messageId: reminders['later-1'] });
      expect(unconfirmed.status).toBe(400);
      expect(await scheduledIds()).toContain(reminders['later-1']);
      expect(await audits('scheduled-cancel')).toEqual([]);

      const dryRun = await call('POST', 'scheduled/cancel', { idempotencyKey: 'later-1', dryRun: true });
      expect(dryRun.json).toMatchObject({ dryRun: true, messageIds: [reminders['later-1']], cancelled: 0 });
      expect(await scheduledIds()).toContain(reminders['later-1']);

      const cancelled = await call('POST', 'scheduled/cancel', {
        idempotencyKey: 'later-1',
        confirm: true,
        note: 'INC-12',
      });
      expect(cancelled).toMatchObject({
        status: 200,
        json: { dryRun: false, messageIds: [reminders['later-1']], cancelled: 1 },
      });
      expect(await scheduledIds()).not.toContain(reminders['later-1']);
      expect(await audits('scheduled-cancel')).toEqual([
        expect.objectContaining({
          actor: 'token:ops',
          outcome: 'completed',
          selection: { idempotencyKey: 'later-1' },
          message_ids: [reminders['later-1']],
          details: { note: 'INC-12', cancelled: 1 },
        }),
      ]);

      const again = await call('POST', 'scheduled/cancel', { idempotencyKey: 'later-1', confirm: true });
      expect(again.status).toBe(404);
    });

    it('the console shows them escaped, a viewer without the cancel, and an operator cancels one in two steps', async () => {
      const viewer = new FormBrowser(origin);
      expect((await viewer.signIn(CONSOLE, VIEWER_TOKEN)).status).toBe(303);
      const overview = await viewer.get(CONSOLE);
      expect(overview.html).toContain(`href="${CONSOLE}/scheduled"`);
      expect(overview.html).toContain(`href="${CONSOLE}/sagas"`);
      const listed = await viewer.get(`${CONSOLE}/scheduled?type=reminder.due`);
      expect(listed.status).toBe(200);
      expect(listed.html).toContain(reminders['soon-1']);
      expect(listed.html).toContain('&lt;script&gt;window.__pwned=1&lt;/script&gt;');
      expect(listed.html).not.toContain(HOSTILE);
      expect((await viewer.get(`${CONSOLE}/scheduled/cancel?messageId=${reminders['soon-1']}`)).status).toBe(
        403,
      );

      const operator = new FormBrowser(origin);
      expect((await operator.signIn(CONSOLE, OPS_TOKEN)).status).toBe(303);
      const preview = await operator.get(`${CONSOLE}/scheduled/cancel?messageId=${reminders['soon-1']}`);
      expect(preview.status).toBe(200);
      expect(preview.html).toContain(reminders['soon-1']);
      expect(await scheduledIds()).toContain(reminders['soon-1']);
      const unticked = await operator.post(`${CONSOLE}/scheduled/cancel`, [
        ['_csrf', csrfOf(preview)],
        ['messageId', reminders['soon-1']],
      ]);
      expect(unticked.status).toBe(400);
      expect(await scheduledIds()).toContain(reminders['soon-1']);
      const done = await operator.post(`${CONSOLE}/scheduled/cancel`, [
        ['_csrf', csrfOf(preview)],
        ['messageId', reminders['soon-1']],
        ['confirm', 'yes'],
      ]);
      expect(done.status).toBe(303);
      expect(done.location).toMatch(new RegExp(`^${CONSOLE}/audit\\?highlight=`));
      expect(await scheduledIds()).not.toContain(reminders['soon-1']);
      expect((await audits('scheduled-cancel')).at(-1)).toMatchObject({
        actor: 'token:ops',
        outcome: 'completed',
        message_ids: [reminders['soon-1']],
      });
    });

    it('the command line cancels by message id once confirmed, audited with its user', async () => {
      const id = reminders[HOSTILE];
      const declined = await dlq(['scheduled', 'cancel', id], () => Promise.resolve('no'));
      expect(declined).toMatchObject({ code: 1, stderr: '' });
      expect(declined.stdout).toContain('nothing cancelled');
      expect(await scheduledIds()).toContain(id);

      const questions: string[] = [];
      const cancelled = await dlq(['scheduled', 'cancel', id, '--note', 'INC-13'], (question) => {
        questions.push(question);
        return Promise.resolve('cancel');
      });
      expect(cancelled).toMatchObject({ code: 0, stderr: '' });
      expect(questions).toEqual([expect.stringContaining('Cancel 1 scheduled message(s)?')]);
      expect(cancelled.stdout).toContain('cancelled 1 scheduled message(s) (audit ');
      expect(await scheduledIds()).toEqual([]);
      expect((await audits('scheduled-cancel')).at(-1)).toMatchObject({
        actor: 'spec-user',
        outcome: 'completed',
        selection: { messageId: id },
        message_ids: [id],
        details: { note: 'INC-13', cancelled: 1 },
      });

      const gone = await dlq(['scheduled', 'cancel', id, '--yes']);
      expect(gone.code).toBe(1);
      expect(gone.stderr).toContain('matched nothing');
      const notAnId = await dlq(['scheduled', 'cancel', 'not-a-uuid', '--yes']);
      expect(notAnId.code).toBe(2);
    });
  });

  describe('saga instances', () => {
    it('the command line lists the instances of a saga by status and page, and shows one with its history newest first', async () => {
      const listed = await dlq(['sagas', 'list', '--saga', SAGA]);
      expect(listed).toMatchObject({ code: 0, stderr: '' });
      expect(listed.stdout).toMatch(/CORRELATION KEY\s+STATUS\s+VERSION\s+TIMEOUTS\s+UPDATED\s+COMPLETED/);
      expect(listed.stdout).toMatch(/o-1\s+completed\s+2\s+0/);
      expect(listed.stdout).toMatch(/o-2\s+active\s+1\s+1/);
      const active = JSON.parse(
        (await dlq(['sagas', 'list', '--saga', SAGA, '--status', 'active', '--json'])).stdout,
      ) as {
        instances: Array<{ correlationKey: string }>;
      };
      expect(active.instances.map((instance) => instance.correlationKey)).toEqual(['o-2']);
      const page = JSON.parse(
        (await dlq(['sagas', 'list', '--saga', SAGA, '--limit', '1', '--json'])).stdout,
      ) as {
        instances: Array<{ correlationKey: string }>;
        next: string;
      };
      expect(page).toMatchObject({ instances: [{ correlationKey: 'o-1' }], more: true, next: 'o-1' });
      const rest = JSON.parse(
        (await dlq(['sagas', 'list', '--saga', SAGA, '--after', 'o-1', '--json'])).stdout,
      ) as {
        instances: Array<{ correlationKey: string }>;
      };
      expect(rest.instances.map((instance) => instance.correlationKey)).toEqual(['o-2']);

      const shown = await dlq(['sagas', 'show', SAGA, 'o-1']);
      expect(shown).toMatchObject({ code: 0, stderr: '' });
      expect(shown.stdout).toContain('status          completed');
      expect(shown.stdout).toContain('version         2');
      expect(shown.stdout).toContain('"delivered": true');
      expect(shown.stdout).toContain('pending timeouts (0)');
      const delivered = shown.stdout.indexOf('shipment.delivered');
      const requested = shown.stdout.indexOf('shipment.requested');
      expect(delivered).toBeGreaterThan(0);
      expect(requested).toBeGreaterThan(delivered);

      const big = await dlq(['sagas', 'show', SAGA, 'o-2']);
      expect(big.stdout).toContain('pending timeouts (1)');
      const [timeout] = (await app.get(SagaInstances).find(SAGA, 'o-2'))!.pendingTimeouts;
      expect(big.stdout).toContain(timeout.messageId);
      expect(big.stdout).toContain('cut: the first 16384 characters');
      expect(big.stdout.length).toBeLessThan(20_000);

      const missing = await dlq(['sagas', 'show', SAGA, 'o-404']);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('no instance of saga');
      expect((await dlq(['sagas', 'list', '--saga', SAGA, '--status', 'running'])).code).toBe(2);
    });

    it('the admin API shows an instance to a viewer with its state cut and as text, audited as a read', async () => {
      const completed = await call(
        'GET',
        `sagas/${SAGA}/instances?status=completed`,
        undefined,
        VIEWER_TOKEN,
      );
      expect(completed.status).toBe(200);
      expect(
        (completed.json.instances as Array<{ correlationKey: string }>).map((i) => i.correlationKey),
      ).toEqual(['o-1']);

      const shown = await call('GET', `sagas/${SAGA}/instances/o-2`, undefined, VIEWER_TOKEN);
      expect(shown.status).toBe(200);
      expect(shown.json).toMatchObject({
        sagaName: SAGA,
        correlationKey: 'o-2',
        status: 'active',
        version: 1,
        stateTruncated: true,
        historyMore: false,
        pendingTimeouts: [{ messageId: expect.any(String), dueAt: expect.any(String) }],
        history: [expect.objectContaining({ messageType: 'shipment.requested', outcome: 'started' })],
      });
      expect(typeof shown.json.state).toBe('string');
      expect((shown.json.state as string).length).toBe(16_384);
      expect(shown.json.stateBytes).toBeGreaterThan(PADDING);
      expect(await audits('read')).toContainEqual(
        expect.objectContaining({ actor: 'token:support', selection: { saga: SAGA, correlationKey: 'o-2' } }),
      );

      expect((await call('GET', `sagas/${SAGA}/instances/o-404`)).status).toBe(404);
      expect((await call('GET', `sagas/${SAGA}/instances?status=running`)).status).toBe(400);
    });

    it('the console lists the instances and shows one with its state escaped and cut, history newest first', async () => {
      const viewer = new FormBrowser(origin);
      expect((await viewer.signIn(CONSOLE, VIEWER_TOKEN)).status).toBe(303);
      const listed = await viewer.get(`${CONSOLE}/sagas?saga=${encodeURIComponent(SAGA)}`);
      expect(listed.status).toBe(200);
      expect(listed.html).toContain(`href="${CONSOLE}/sagas/${encodeURIComponent(SAGA)}/instances/o-2"`);

      const small = await viewer.get(`${CONSOLE}/sagas/${encodeURIComponent(SAGA)}/instances/o-1`);
      expect(small.status).toBe(200);
      expect(small.html).toContain('&lt;script&gt;window.__pwned=1&lt;/script&gt;');
      expect(small.html).not.toContain(HOSTILE);
      expect(small.html.indexOf('shipment.delivered')).toBeGreaterThan(0);
      expect(small.html.indexOf('shipment.requested')).toBeGreaterThan(
        small.html.indexOf('shipment.delivered'),
      );

      const big = await viewer.get(`${CONSOLE}/sagas/${encodeURIComponent(SAGA)}/instances/o-2`);
      expect(big.status).toBe(200);
      expect(big.html).not.toContain(HOSTILE);
      expect(big.html).toContain('only its first 16,384 characters are shown');
      expect(big.html).not.toContain('p'.repeat(PADDING));
      expect(big.html.length).toBeLessThan(PADDING);
    });
  });
});
