import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MessagePublisher, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { DeadLetterAdminModule } from 'nestjs-reliable-messaging-admin';
import { OutboxStore } from 'nestjs-reliable-messaging/operations';
import { runDeadLetterCli } from 'nestjs-reliable-messaging-admin/cli';
import { outboxRows, type MessagingDatabase, type OutboxRowView } from './support/messaging-database';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import type { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

const TOKEN = '1d07061ab1ec07029a5bffedffc119bc99a208bb';
const MAX_BATCH = 5;

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
  message_ids: string[];
  details: Record<string, unknown>;
}

describe('parked outbox rows: list, show, retry in key order, discard, from the command line and the admin API', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let exchange: string;
  let app: INestApplication<Server>;
  let base: string;

  beforeAll(async () => {
    setup = await outboxSetup({ auditBinding: 'audited.#', admin: true });
    ({ db, broker, exchange } = setup);

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange,
          connectionName: `${broker.prefix}.outbox-ops`,
          dataSource: db.dataSource,
          outbox: { pollIntervalMs: 100 },
        }),
        DeadLetterAdminModule.register({ tokens: { ops: TOKEN }, maxBatchSize: MAX_BATCH }),
      ],
    })
    class OutboxOperationsSpecModule {}

    app = await NestFactory.create(OutboxOperationsSpecModule, { logger: false, abortOnError: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/admin/dead-letters/outbox`;
  });

  afterAll(async () => {
    await app?.close();
    await setup?.close();
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
    authorization: string | null = `Bearer ${TOKEN}`,
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const response = await fetch(`${base}/${path}`, {
      method,
      headers: {
        ...(authorization === null ? {} : { authorization }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  }

  async function row(name: string): Promise<OutboxRowView | undefined> {
    return (await outboxRows(db.dataSource)).find((r) => r.body.includes(`"name":"${name}"`));
  }

  async function statusOf(name: string): Promise<string | undefined> {
    return (await row(name))?.status;
  }

  async function audits(): Promise<AuditRow[]> {
    return db.dataSource.query<AuditRow[]>(
      `SELECT action, actor, outcome, message_ids, details FROM rm_dead_letter_audit ORDER BY started_at, id`,
    );
  }

  /**
   * Writes, in one transaction, a keyed row whose routing key nothing is bound to (the broker returns it, the relay
   * parks it) and a later row of the same key that `queue` receives; then a keyless routable row that shows the
   * relay went round after the park. Resolves once the first is parked and the relay passed over the second.
   */
  async function parkAheadOfItsKey(prefix: string, queue: string): Promise<void> {
    const publisher = app.get(MessagePublisher);
    const channel = await broker.openChannel();
    await channel.assertQueue(queue, { durable: false });
    await channel.bindQueue(queue, exchange, `${prefix}.later`);
    await db.dataSource.transaction(async (manager) => {
      const key = `${prefix}-key`;
      await publisher.publish(
        { type: `${prefix}.first`, payload: { name: `${prefix}-first` }, idempotencyKey: `${prefix}-1` },
        { manager, orderingKey: key },
      );
      await publisher.publish(
        { type: `${prefix}.later`, payload: { name: `${prefix}-later` }, idempotencyKey: `${prefix}-2` },
        { manager, orderingKey: key },
      );
    });
    await waitFor(`${prefix}-first parked`, async () => (await statusOf(`${prefix}-first`)) === 'parked');
    await db.dataSource.transaction((manager) =>
      publisher.publish(
        { type: 'audited.tick', payload: { name: `${prefix}-tick` }, idempotencyKey: `${prefix}-tick` },
        { manager },
      ),
    );
    await waitFor(`${prefix}-tick published`, async () => (await statusOf(`${prefix}-tick`)) === 'published');
  }

  async function parkKeyless(name: string): Promise<OutboxRowView> {
    await db.dataSource.transaction((manager) =>
      app
        .get(MessagePublisher)
        .publish({ type: 'nowhere.bound', payload: { name }, idempotencyKey: name }, { manager }),
    );
    await waitFor(`${name} parked`, async () => (await statusOf(name)) === 'parked');
    return (await row(name)) as OutboxRowView;
  }

  /** Names of the messages on `queue`, in the order the broker delivered them. */
  async function delivered(queue: string, count: number): Promise<string[]> {
    const messages = await broker.waitForMessages(queue, count);
    return messages.map((m) => (JSON.parse(m.content.toString()) as { name: string }).name);
  }

  it('the command line: a parked row holds back its key, is listed and shown as such, and a retry delivers it before the later row', async () => {
    const queue = broker.name('parcels');
    await parkAheadOfItsKey('parcel', queue);
    expect(await statusOf('parcel-later')).toBe('pending');
    const first = (await row('parcel-first')) as OutboxRowView;

    const listed = await dlq(['outbox', 'list', '--ordering-key', 'parcel-key']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/ROW\s+PARKED\s+MESSAGE ID\s+TYPE\s+ORDERING KEY\s+HOLDING BACK\s+REASON/);
    expect(listed.stdout).toContain('1 parked row(s), holding back 1 later row(s) of their ordering keys');
    const json = JSON.parse((await dlq(['outbox', 'list', '--type', 'parcel.first', '--json'])).stdout) as {
      rows: Array<Record<string, unknown>>;
    };
    expect(json.rows).toEqual([
      expect.objectContaining({
        id: String(first.id),
        messageId: first.messageId,
        orderingKey: 'parcel-key',
        holdingBack: 1,
        reason: expect.stringMatching(/^unroutable: /),
      }),
    ]);
    const shown = await dlq(['outbox', 'show', first.messageId]);
    expect(shown.stdout).toContain('ordering key    parcel-key (holding back 1 later row(s) of this key)');
    expect(shown.stdout).toContain('"name":"parcel-first"');

    const dryRun = await dlq(['outbox', 'retry', String(first.id), '--dry-run']);
    expect(dryRun).toMatchObject({ code: 0 });
    expect(dryRun.stdout).toContain('would have retried 1 parked outbox row(s)');
    expect(await statusOf('parcel-first')).toBe('parked');
    expect(await audits()).toEqual([]);

    const channel = await broker.openChannel();
    await channel.bindQueue(queue, exchange, 'parcel.first');
    const retried = await dlq(['outbox', 'retry', '--type', 'parcel.first', '--note', 'INC-9']);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toContain('retried 1 parked outbox row(s) (audit ');
    expect(await delivered(queue, 2)).toEqual(['parcel-first', 'parcel-later']);
  });

  it('the command line: discards a parked row after --yes, and an empty selection fails unless --allow-empty', async () => {
    const stray = await parkKeyless('stray');
    const noTerminal = await dlq(['outbox', 'discard', String(stray.id)]);
    expect(noTerminal.code).toBe(2);
    expect(noTerminal.stderr).toContain('add --yes');
    expect(await statusOf('stray')).toBe('parked');
    const discarded = await dlq(['outbox', 'discard', String(stray.id), '--yes']);
    expect(discarded).toMatchObject({ code: 0 });
    expect(discarded.stdout).toContain(`discarded 1 parked outbox row(s)`);
    expect(await row('stray')).toBeUndefined();

    const nothing = await dlq(['outbox', 'retry', String(stray.id)]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('the outbox retry matched nothing');
    expect(await dlq(['outbox', 'retry', String(stray.id), '--allow-empty'])).toMatchObject({ code: 0 });
    expect(await dlq(['outbox', 'retry'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('needs a selection'),
    });

    expect((await audits()).map((a) => [a.action, a.actor, a.outcome, a.message_ids.length])).toEqual([
      ['outbox-retry', 'spec-user', 'completed', 1],
      ['outbox-discard', 'spec-user', 'completed', 1],
      ['outbox-retry', 'spec-user', 'failed', 0],
      ['outbox-retry', 'spec-user', 'completed', 0],
    ]);
    expect((await audits())[0].details).toMatchObject({ note: 'INC-9' });
  });

  it('the command line: a confirmed discard deletes only the rows its preview showed, not one parked while it asked', async () => {
    const shown = await parkKeyless('race-shown');
    const questions: string[] = [];
    const discarded = await dlq(['outbox', 'discard', '--text', 'race-'], async (question) => {
      questions.push(question);
      await parkKeyless('race-late');
      return 'discard';
    });
    expect(questions).toEqual([expect.stringContaining('Discard 1 parked outbox row(s) for good?')]);
    expect(discarded).toMatchObject({ code: 0 });
    expect(discarded.stdout).toContain(`discarded 1 parked outbox row(s)`);
    expect(discarded.stdout).toContain(shown.messageId);
    expect(await row('race-shown')).toBeUndefined();
    expect(await statusOf('race-late')).toBe('parked');
    expect(await dlq(['outbox', 'discard', '--text', 'race-late', '--yes'])).toMatchObject({ code: 0 });
  });

  it('the admin API: lists with holdingBack, refuses without the token or above the batch, retries in key order, discards only with confirm', async () => {
    const queue = broker.name('crates');
    await parkAheadOfItsKey('crate', queue);
    const first = (await row('crate-first')) as OutboxRowView;
    const stray = await parkKeyless('stray-crate');

    expect((await call('GET', 'rows', undefined, null)).status).toBe(401);
    expect((await call('POST', 'retry', { all: true }, `Bearer ${'x'.repeat(32)}`)).status).toBe(401);
    const listed = await call('GET', 'rows?orderingKey=crate-key');
    expect(listed).toMatchObject({
      status: 200,
      json: { rows: [expect.objectContaining({ id: String(first.id), holdingBack: 1 })], more: false },
    });
    expect(await call('GET', `rows/${first.messageId}`)).toMatchObject({
      status: 200,
      json: { id: String(first.id), bodyEncoding: 'utf8', holdingBack: 1 },
    });
    expect((await call('GET', 'rows/424242')).status).toBe(404);
    expect((await call('POST', 'retry', { all: true, limit: MAX_BATCH + 1 })).status).toBe(400);

    expect(await call('POST', 'retry', { ids: [String(first.id)], dryRun: true })).toMatchObject({
      status: 200,
      json: { dryRun: true, ids: [String(first.id)] },
    });
    expect(await call('POST', 'discard', { ids: [String(stray.id)] })).toMatchObject({ status: 400 });
    expect(await statusOf('crate-first')).toBe('parked');
    expect(await statusOf('stray-crate')).toBe('parked');
    const auditsBefore = (await audits()).length;

    const channel = await broker.openChannel();
    await channel.bindQueue(queue, exchange, 'crate.first');
    expect(await call('POST', 'retry', { ids: [first.messageId] })).toMatchObject({
      status: 200,
      json: { action: 'outbox-retry', ids: [String(first.id)], auditId: expect.any(String) },
    });
    expect(await delivered(queue, 2)).toEqual(['crate-first', 'crate-later']);
    expect(await call('POST', 'discard', { ids: [String(stray.id)], confirm: true })).toMatchObject({
      status: 200,
      json: { action: 'outbox-discard', messageIds: [stray.messageId] },
    });
    expect(await row('stray-crate')).toBeUndefined();
    expect((await call('POST', 'retry', { ids: [String(stray.id)] })).status).toBe(404);

    expect(
      (await audits()).slice(auditsBefore).map((a) => [a.action, a.actor, a.outcome, a.message_ids]),
    ).toEqual([
      ['outbox-retry', 'token:ops', 'completed', [first.messageId]],
      ['outbox-discard', 'token:ops', 'completed', [stray.messageId]],
      ['outbox-retry', 'token:ops', 'failed', []],
    ]);
  });

  it('a row id past the bigint range: 400 from the admin API and a usage error from the command line, never a failed query', async () => {
    const auditsBefore = (await audits()).length;
    const tooLarge = '9223372036854775808';
    const twentyDigits = '99999999999999999999';

    for (const id of [tooLarge, twentyDigits, '0']) {
      const shown = await call('GET', `rows/${id}`);
      expect(shown.status).toBe(400);
      expect(shown.json.message).toBe(
        `'${id}' is not an outbox row id: row ids run from 1 to 9223372036854775807`,
      );
    }
    expect(await call('GET', `rows?ids=1,${twentyDigits}`)).toMatchObject({ status: 400 });
    expect(await call('POST', 'retry', { ids: [tooLarge] })).toMatchObject({
      status: 400,
      json: { message: expect.stringContaining('is not an outbox row id') },
    });
    expect(await call('POST', 'discard', { ids: [twentyDigits], confirm: true })).toMatchObject({
      status: 400,
    });
    expect((await call('GET', 'rows/9223372036854775807')).status).toBe(404);

    const cli = await dlq(['outbox', 'show', twentyDigits]);
    expect(cli).toMatchObject({ code: 2, stderr: expect.stringContaining('is not an outbox row id') });
    expect(await dlq(['outbox', 'retry', tooLarge])).toMatchObject({ code: 2 });

    // The store itself reads such an id as no row id at all, for any other caller.
    await expect(
      app.get(OutboxStore, { strict: false }).findParked({ ids: [tooLarge, twentyDigits] }, 10),
    ).resolves.toEqual([]);
    expect((await audits()).length).toBe(auditsBefore);
  });
});
