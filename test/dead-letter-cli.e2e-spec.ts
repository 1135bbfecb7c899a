import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { Injectable } from '@nestjs/common';
import { IsInt, IsString } from 'class-validator';
import { Consume, MessageType, NonRetryableError, type MessageContext } from 'nestjs-reliable-messaging';
import { ReliableMessagingAdminModule } from 'nestjs-reliable-messaging-admin';
import { runDeadLetterCli } from 'nestjs-reliable-messaging-admin/cli';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'invoice.requested', idempotencyKey: (m: InvoiceRequested) => `invoice:${m.invoiceId}` })
class InvoiceRequested {
  @IsString() invoiceId!: string;
  @IsInt() amountCents!: number;
}

class TaxServiceDown extends Error {}
class NegativeAmount extends NonRetryableError {}

const QUEUE = uniqueQueue('invoices');
const DLQ = `${QUEUE}.dlq`;

/** A line of the JSON-lines audit file, as far as the specs read it. */
interface AuditLine {
  action: string;
  actor: string;
  messageCount: number;
  outcome: string;
  details: Record<string, unknown>;
}

@Injectable()
class InvoiceHandler {
  readonly invoiced: Array<{ invoiceId: string; amountCents: number }> = [];
  taxServiceDown = true;

  // NOTE: a classic queue, whose depth the broker reports at once (a quorum queue's lags).
  @Consume({ queue: QUEUE, queueType: 'classic', retry: { maxAttempts: 1 } })
  async onInvoice(event: InvoiceRequested, _ctx: MessageContext): Promise<void> {
    if (event.amountCents < 0) throw new NegativeAmount(`amount must not be negative: ${event.amountCents}`);
    if (this.taxServiceDown) throw new TaxServiceDown('the tax service is down');
    this.invoiced.push({ invoiceId: event.invoiceId, amountCents: event.amountCents });
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

/** A terminal's stdin that answers `answer` to the first question. */
function terminalAnswering(answer: string): PassThrough & { isTTY: boolean } {
  const stdin = Object.assign(new PassThrough(), { isTTY: true });
  stdin.write(`${answer}\n`);
  return stdin;
}

describe('the dlq command line: list, show, replay, edit, purge with confirmation, audit', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: InvoiceHandler;
  let auditDir: string;

  beforeAll(async () => {
    auditDir = mkdtempSync(join(tmpdir(), 'dlq-audit-'));
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [InvoiceHandler],
      imports: [ReliableMessagingAdminModule],
      options: { deadLetterAuditFile: join(auditDir, 'audit.jsonl') },
    });
    handler = app.get(InvoiceHandler);
    for (const [invoiceId, amountCents] of [
      ['i-1', 100],
      ['i-2', 200],
      ['i-3', -5],
      ['i-4', 400],
    ] as const) {
      await app.publisher.publish(Object.assign(new InvoiceRequested(), { invoiceId, amountCents }));
    }
    await waitFor('four dead letters', async () => (await broker.queueDepth(DLQ)) === 4);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    rmSync(auditDir, { recursive: true, force: true });
  });

  async function dlq(
    args: string[],
    stdin: NodeJS.ReadableStream & { isTTY?: boolean } = new PassThrough(),
    confirm?: (question: string) => Promise<string>,
  ) {
    const stdout = new Capture();
    const stderr = new Capture();
    const code = await runDeadLetterCli(app.app, ['node', 'dlq', ...args], {
      stdout,
      stderr,
      stdin,
      actor: 'spec-user',
      confirm,
    });
    return { code, stdout: stdout.text, stderr: stderr.text };
  }

  async function ids(filter: string[] = []): Promise<string[]> {
    const { stdout } = await dlq(['list', '--queue', QUEUE, '--json', ...filter]);
    return (JSON.parse(stdout) as { deadLetters: Array<{ messageId: string }> }).deadLetters.map(
      (d) => d.messageId,
    );
  }

  it('lists dead letters with filters and shows one in full', async () => {
    const all = await dlq(['list', '--queue', QUEUE]);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/DEAD-LETTERED\s+QUEUE\s+MESSAGE ID\s+TYPE\s+REASON\s+ERROR/);
    expect(all.stdout).toContain('4 dead letter(s), 4 read');

    expect(await ids(['--error-class', 'NegativeAmount'])).toHaveLength(1);
    expect(await ids(['--text', 'tax service'])).toHaveLength(3);
    expect(await ids(['--text', '"i-4"'])).toHaveLength(1);
    expect(await ids(['--since', '1h', '--type', 'invoice.requested'])).toHaveLength(4);
    expect(await ids(['--until', '1h'])).toHaveLength(0);

    const [negative] = await ids(['--error-class', 'NegativeAmount']);
    const shown = await dlq(['show', negative, '--queue', QUEUE, '--json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      messageId: negative,
      queue: QUEUE,
      reason: 'non-retryable',
      errorClass: 'NegativeAmount',
      errorMessage: 'amount must not be negative: -5',
      attempts: 1,
      handler: 'InvoiceHandler.onInvoice',
      routingKey: 'invoice.requested',
      bodyEncoding: 'json',
      body: { invoiceId: 'i-3', amountCents: -5 },
    });
    expect((await dlq(['show', 'no-such-id', '--queue', QUEUE])).stderr).toContain(
      "no dead letter with message id 'no-such-id'",
    );
  });

  it('replays one dead letter by id, and edits another before replaying it', async () => {
    handler.taxServiceDown = false;
    const [first] = await ids(['--text', '"i-1"']);
    const replayed = await dlq(['replay', first, '--queue', QUEUE]);
    expect(replayed).toMatchObject({ code: 0 });
    expect(replayed.stdout).toContain(`replayed 1 dead letter(s) (audit `);

    const [negative] = await ids(['--error-class', 'NegativeAmount']);
    const dryRun = await dlq(['edit', negative, '--queue', QUEUE, '--set', 'amountCents=300', '--dry-run']);
    expect(dryRun.stdout).toContain('after:  {"invoiceId":"i-3","amountCents":300}');
    expect(dryRun.stdout).toContain('would have replayed 1 dead letter(s)');
    const edited = await dlq([
      'edit',
      negative,
      '--queue',
      QUEUE,
      '--set',
      'amountCents=300',
      '--note',
      'INC-7',
    ]);
    expect(edited.code).toBe(0);

    await waitFor('both to be invoiced', () => handler.invoiced.length === 2);
    expect(handler.invoiced).toEqual(
      expect.arrayContaining([
        { invoiceId: 'i-1', amountCents: 100 },
        { invoiceId: 'i-3', amountCents: 300 },
      ]),
    );
    expect(await ids()).toHaveLength(2);
  });

  it('purges only after confirmation: refused without a terminal, cancelled on a wrong answer, done on "purge"', async () => {
    const noTerminal = await dlq(['purge', '--queue', QUEUE, '--all']);
    expect(noTerminal.code).toBe(2);
    expect(noTerminal.stderr).toContain('add --yes');
    const dryRun = await dlq(['purge', '--queue', QUEUE, '--all', '--dry-run']);
    expect(dryRun.stdout).toContain('would have purged 2 dead letter(s)');
    const cancelled = await dlq(['purge', '--queue', QUEUE, '--all'], terminalAnswering('no'));
    expect(cancelled).toMatchObject({ code: 1 });
    expect(cancelled.stdout).toContain('nothing purged');
    expect(cancelled.stderr).toContain(
      `Purge 2 dead letter(s) from ${QUEUE} for good? Type 'purge' to confirm:`,
    );
    expect(await ids()).toHaveLength(2);

    const [i2] = await ids(['--text', '"i-2"']);
    const one = await dlq(['purge', i2, '--queue', QUEUE], terminalAnswering('purge'));
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`purged 1 dead letter(s)`);
    const rest = await dlq(['purge', '--queue', QUEUE, '--all', '--yes', '--json']);
    expect(JSON.parse(rest.stdout)).toMatchObject({
      action: 'purge',
      dryRun: false,
      failures: [],
      more: false,
    });
    expect(await broker.queueDepth(DLQ)).toBe(0);
  });

  it('refuses a replay with no selection and a malformed time, as usage errors', async () => {
    expect(await dlq(['replay', '--queue', QUEUE])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('needs a selection'),
    });
    expect(await dlq(['list', '--since', 'yesterday'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("'since' must be"),
    });
    expect((await dlq(['frobnicate'])).code).toBe(2);
  });

  it('records every read, replay, edit and purge with who, what and which messages in the audit file', async () => {
    const lines = readFileSync(join(auditDir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditLine);
    const completed = lines.filter((record) => record.outcome === 'completed');
    expect(completed.map((record) => [record.action, record.actor, record.messageCount])).toEqual([
      ['read', 'spec-user', 1],
      ['replay', 'spec-user', 1],
      ['edit-replay', 'spec-user', 1],
      ['purge', 'spec-user', 1],
      ['purge', 'spec-user', 1],
    ]);
    expect(lines.filter((record) => record.outcome === 'started')).toHaveLength(4);
    expect(completed[2].details).toMatchObject({ note: 'INC-7', bodySha256Before: expect.any(String) });

    const audit = await dlq(['audit', '--json']);
    expect((JSON.parse(audit.stdout) as Array<{ action: string }>).map((record) => record.action)).toEqual([
      'purge',
      'purge',
      'edit-replay',
      'replay',
      'read',
    ]);
  });

  it('a confirmed purge removes only the dead letters its preview showed, not one dead-lettered while it asked', async () => {
    const invoice = (invoiceId: string) =>
      app.publisher.publish(Object.assign(new InvoiceRequested(), { invoiceId, amountCents: -1 }));
    await invoice('i-shown');
    await waitFor('one dead letter', async () => (await broker.queueDepth(DLQ)) === 1);
    const [shown] = await ids();
    const questions: string[] = [];
    const purged = await dlq(['purge', '--queue', QUEUE, '--all'], undefined, async (question) => {
      questions.push(question);
      await invoice('i-late');
      await waitFor('the late dead letter', async () => (await broker.queueDepth(DLQ)) === 2);
      return 'purge';
    });
    expect(questions).toEqual([expect.stringContaining(`Purge 1 dead letter(s) from ${QUEUE} for good?`)]);
    expect(purged).toMatchObject({ code: 0, stdout: expect.stringContaining('purged 1 dead letter(s)') });
    const left = await ids();
    expect(left).toHaveLength(1);
    expect(left).not.toContain(shown);
  });
});
