import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Consume, MessageType, NonRetryableError, type MessageContext } from 'nestjs-reliable-messaging';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** The admin package's `dlq` bin as built: run by node, with no app, no source and no build step. */
const DLQ_BIN = `${process.env.ORDER_SERVICE_DIST ?? 'dist'}/libs/reliable-messaging-admin/src/cli/dlq.bin.js`;

@MessageType({ type: 'label.requested', idempotencyKey: (m: LabelRequested) => `label:${m.labelId}` })
class LabelRequested {
  @IsString() labelId!: string;
}

const QUEUE = uniqueQueue('labels');

@Injectable()
class LabelHandler {
  readonly printed: string[] = [];
  printerJammed = true;

  // NOTE: a classic queue, whose depth the broker reports at once (a quorum queue's lags).
  @Consume({ queue: QUEUE, queueType: 'classic', retry: { maxAttempts: 1 } })
  async onLabel(event: LabelRequested, _ctx: MessageContext): Promise<void> {
    if (this.printerJammed) throw new NonRetryableError('the printer is jammed');
    this.printed.push(event.labelId);
  }
}

interface AuditRow {
  action: string;
  actor: string;
  outcome: string;
  message_ids: string[];
}

describe('the admin package’s dlq bin, run as an operator runs it in a pod: node, the environment, no app', () => {
  let broker: TestBroker;
  let db: MessagingDatabase;
  let app: MessagingTestApp;
  let handler: LabelHandler;

  beforeAll(async () => {
    if (!existsSync(DLQ_BIN)) throw new Error(`${DLQ_BIN} is missing: run npm run build first`);
    db = await createMessagingDatabase([], { admin: true });
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [LabelHandler],
      options: { dataSource: db.dataSource },
    });
    handler = app.get(LabelHandler);
    await app.publisher.publishNow(Object.assign(new LabelRequested(), { labelId: 'l-1' }));
    await waitFor('the dead letter', async () => (await broker.queueDepth(`${QUEUE}.dlq`)) === 1);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  /** Runs the bin with only what a pod has: the broker, the database, the app's exchange name and queues. */
  function dlq(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [DLQ_BIN, ...args], {
      env: {
        PATH: process.env.PATH,
        AMQP_URL: broker.url,
        DATABASE_URL: db.database.url,
        RM_EXCHANGE: broker.name('events'),
        RM_CONNECTION_NAME: `${broker.prefix}.dlq-bin`,
        RM_QUEUES: QUEUE,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = { stdout: '', stderr: '' };
    child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
    return new Promise((resolve) => child.on('exit', (code) => resolve({ code, ...output })));
  }

  it('lists the dead letter, then replays it to its queue, where the fixed handler takes it, with an audit row', async () => {
    const listed = await dlq(['list', '--queue', QUEUE, '--json']);
    expect(listed).toMatchObject({ code: 0 });
    const { deadLetters } = JSON.parse(listed.stdout) as {
      deadLetters: Array<{ messageId: string; queue: string; errorMessage?: string }>;
    };
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({ queue: QUEUE, errorMessage: 'the printer is jammed' });

    handler.printerJammed = false;
    const replayed = await dlq([
      'replay',
      deadLetters[0].messageId,
      '--queue',
      QUEUE,
      '--note',
      'printer fixed',
    ]);
    expect(replayed).toMatchObject({ code: 0 });

    await waitFor('the replayed label printed', async () => handler.printed.includes('l-1'));
    expect(await broker.queueDepth(`${QUEUE}.dlq`)).toBe(0);
    const audit = await db.dataSource.query<AuditRow[]>(
      `SELECT action, actor, outcome, message_ids FROM rm_dead_letter_audit`,
    );
    expect(audit).toEqual([
      {
        action: 'replay',
        // The OS user and the host, as the bin found them: no app told it who runs it.
        actor: expect.stringContaining('@') as unknown as string,
        outcome: 'completed',
        message_ids: [deadLetters[0].messageId],
      },
    ]);
  });

  it('refuses to start without AMQP_URL, saying what to set', async () => {
    const child = spawn(process.execPath, [DLQ_BIN, 'list', '--queue', QUEUE], {
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/set AMQP_URL to the broker the app uses/);
  });
});
