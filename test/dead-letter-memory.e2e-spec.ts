import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Injectable, Module, type CanActivate, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IsString } from 'class-validator';
import { Consume, MessageType, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { DeadLetterAdminModule, DeadLetterOperations } from 'nestjs-reliable-messaging-admin';
import { uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'upload.received' })
class UploadReceived {
  @IsString() uploadId!: string;
}

/** Lets every request in: this spec is about memory, not sign-in. */
@Injectable()
class OpenDoor implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

const MIB = 2 ** 20;
const BODY_BYTES = 16 * MIB;
const DEAD_LETTERS = 40;
/** What the bodies weigh together: 640 MiB, beyond the pod's memory limit in deploy/k8s (512 MiB). */
const BODIES_BYTES = BODY_BYTES * DEAD_LETTERS;
const POD_LIMIT_BYTES = 512 * MIB;
/** The most a read may grow the process by: a few bodies in flight and not yet collected, never all 40. */
const BOUND_BYTES = 256 * MIB;
const QUEUE = uniqueQueue('uploads');
const DLQ = `${QUEUE}.dlq`;

@Injectable()
class UploadHandler {
  // NOTE: a classic queue, whose depth the broker reports at once (a quorum queue's lags).
  @Consume({ queue: QUEUE, queueType: 'classic' })
  async onUpload(_event: UploadReceived): Promise<void> {}
}

// NOTE: Jest runs without --expose-gc; the flag can still be set at run time, and a new context then has gc().
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * Collects garbage until Buffer memory stops falling.
 *
 * NOTE: V8 frees the memory of collected ArrayBuffers on a background thread, so the figure drops a moment
 * after gc() returns, not at once.
 */
async function settleGarbage(): Promise<void> {
  let previous = Infinity;
  for (let round = 0; round < 20; round++) {
    collectGarbage();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const now = process.memoryUsage().arrayBuffers;
    if (now >= previous) return;
    previous = now;
  }
}

/** The process's growth while `work` runs: the peak of RSS and of Buffer memory over the start, sampled every 5 ms. */
async function growthDuring<T>(
  work: () => Promise<T>,
): Promise<{ result: T; rssBefore: number; rssPeak: number; arrayBuffersGrowth: number }> {
  await settleGarbage();
  const before = process.memoryUsage();
  let rssPeak = before.rss;
  let arrayBuffersPeak = before.arrayBuffers;
  const sample = () => {
    const now = process.memoryUsage();
    rssPeak = Math.max(rssPeak, now.rss);
    arrayBuffersPeak = Math.max(arrayBuffersPeak, now.arrayBuffers);
  };
  const timer = setInterval(sample, 5);
  try {
    const result = await work();
    sample();
    return {
      result,
      rssBefore: before.rss,
      rssPeak,
      arrayBuffersGrowth: arrayBuffersPeak - before.arrayBuffers,
    };
  } finally {
    clearInterval(timer);
  }
}

function mib(bytes: number): string {
  return `${(bytes / MIB).toFixed(0)} MiB`;
}

describe(`memory over ${DEAD_LETTERS} dead letters of 16 MiB`, () => {
  let broker: TestBroker;
  let app: INestApplication<Server>;
  let base: string;
  const figures: string[] = [];

  beforeAll(async () => {
    broker = await TestBroker.connect();
    broker.track(QUEUE, DLQ);

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange: broker.name('events'),
          connectionName: `${broker.prefix}.memory`,
        }),
        DeadLetterAdminModule.register({ guard: OpenDoor, console: true }),
      ],
      providers: [UploadHandler],
    })
    class MemorySpecModule {}

    app = await NestFactory.create(MemorySpecModule, { logger: false, abortOnError: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/admin/dead-letters`;

    // Refused as too large, a dead letter keeps its body: what a producer sending oversized messages leaves.
    const body = Buffer.alloc(BODY_BYTES, 'x');
    for (let i = 0; i < DEAD_LETTERS; i++) {
      body.write(`{"uploadId":"big-${String(i).padStart(2, '0')}","data":"`, 0, 'utf8');
      body.write('"}', BODY_BYTES - 2, 'utf8');
      await broker.publishRaw({ queue: DLQ }, body, {
        messageId: `big-${i}`,
        type: 'upload.received',
        contentType: 'application/json',
        headers: {
          [DEAD_LETTER_HEADERS.queue]: QUEUE,
          [DEAD_LETTER_HEADERS.reason]: 'payload-too-large',
          [DEAD_LETTER_HEADERS.errorClass]: 'PayloadTooLargeError',
          [DEAD_LETTER_HEADERS.lastFailureAt]: new Date().toISOString(),
        },
      });
    }
    await waitFor(
      `${DEAD_LETTERS} dead letters`,
      async () => (await broker.queueDepth(DLQ)) === DEAD_LETTERS,
      {
        timeoutMs: 60_000,
      },
    );
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    if (figures.length > 0) process.stderr.write(`${figures.join('\n')}\n`);
  });

  function record(what: string, growth: { rssBefore: number; rssPeak: number; arrayBuffersGrowth: number }) {
    figures.push(
      `${what}: RSS ${mib(growth.rssBefore)} before, peak ${mib(growth.rssPeak)} (${mib(growth.rssPeak - growth.rssBefore)} more; pod limit ${mib(POD_LIMIT_BYTES)}); Buffers grew by ${mib(growth.arrayBuffersGrowth)} at most; the bodies weigh ${mib(BODIES_BYTES)}`,
    );
  }

  it('opens the overview, counting reasons within the read budget, without holding the bodies', async () => {
    const growth = await growthDuring(async () => {
      const response = await fetch(`${base}/console`);
      return { status: response.status, page: await response.text() };
    });
    record('overview', growth);

    expect(growth.result.status).toBe(200);
    // At the default budget of 64 MiB the count reads 4 bodies of 16 MiB and says it stopped there.
    expect(growth.result.page).toMatch(/payload-too-large <b>4<\/b>/);
    expect(growth.result.page).toContain('(of the oldest 4: the count stopped at the read budget of 64 MiB)');
    expect(growth.arrayBuffersGrowth).toBeLessThan(BOUND_BYTES);
    expect(growth.rssPeak - growth.rssBefore).toBeLessThan(BOUND_BYTES);
    expect(growth.rssPeak).toBeLessThan(POD_LIMIT_BYTES);
  }, 120_000);

  it('answers the API list at its default limit within the read budget, saying it is partial', async () => {
    const growth = await growthDuring(async () => {
      const response = await fetch(`${base}/messages?queue=${QUEUE}`);
      return { status: response.status, json: (await response.json()) as Record<string, unknown> };
    });
    record(`API list (${String(growth.result.json.scanned)} read)`, growth);

    expect(growth.result.status).toBe(200);
    expect(growth.result.json).toMatchObject({
      scanned: 4,
      more: true,
      stoppedAtReadBudget: true,
      readBytes: expect.any(Number),
    });
    expect(growth.result.json.deadLetters).toEqual(
      [0, 1, 2, 3].map((i) =>
        expect.objectContaining({
          messageId: `big-${i}`,
          reason: 'payload-too-large',
          bodyBytes: BODY_BYTES,
        }),
      ),
    );
    expect(growth.arrayBuffersGrowth).toBeLessThan(BOUND_BYTES);
    expect(growth.rssPeak - growth.rssBefore).toBeLessThan(BOUND_BYTES);
    expect(growth.rssPeak).toBeLessThan(POD_LIMIT_BYTES);
  }, 120_000);

  it('lists every one of them through the operations, past the default budget, without holding the bodies', async () => {
    const operations = app.get(DeadLetterOperations);
    // show reads the one body asked for, whole.
    expect((await operations.show('big-0', QUEUE)).body.length).toBe(BODY_BYTES);
    // A budget above the bodies' total: what keeps memory bounded here is that no body is held.
    const growth = await growthDuring(() =>
      operations.list({ queue: QUEUE }, { limit: 100, maxReadBytes: 2 * BODIES_BYTES }),
    );
    record('operations list of all 40', growth);

    expect(growth.result).toMatchObject({ scanned: DEAD_LETTERS, more: false, stoppedAtReadBudget: false });
    expect(growth.result.deadLetters).toHaveLength(DEAD_LETTERS);
    expect(growth.result.deadLetters[0]).not.toHaveProperty('body');
    expect(growth.result.readBytes).toBeGreaterThanOrEqual(BODIES_BYTES);

    expect(growth.arrayBuffersGrowth).toBeLessThan(BOUND_BYTES);
    expect(growth.rssPeak - growth.rssBefore).toBeLessThan(BOUND_BYTES);
    expect(await broker.queueDepth(DLQ)).toBe(DEAD_LETTERS);
  }, 120_000);
});
