import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Options } from 'amqplib';
import { Type } from 'class-transformer';
import { IsOptional, IsString, ValidateNested } from 'class-validator';
import { Consume, HEADERS, MessageType, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { DeadLetterAdminModule } from 'nestjs-reliable-messaging-admin';
import { uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

class Branch {
  @IsOptional() @ValidateNested({ each: true }) @Type(() => Branch) branches?: Branch[];
}

/** A message class with class-transformer decorators: plainToInstance recurses once per level of `root`. */
@MessageType({ type: 'tree.grown', idempotencyKey: (m: TreeGrown) => `tree:${m.treeId}` })
class TreeGrown {
  @IsString() treeId!: string;
  @IsOptional() @ValidateNested() @Type(() => Branch) root?: Branch;
}

const TOKEN = '9c41e7a03b5d82f6c1a94e07d3b68f25a0e7c4d1';
const QUEUE = uniqueQueue('deep-json');
const DEPTH = 20_000;
/** About 40 KB: `root` is an array nested 20 000 deep. */
const DEEP_BODY = `{"treeId":"t-deep","root":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}}`;

@Injectable()
class TreeHandler {
  readonly grown: string[] = [];

  // NOTE: retries a second apart, so a refusal counted as a retryable failure shows as attempts above 1 quickly.
  @Consume({
    queue: QUEUE,
    queueType: 'classic',
    retry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 200 },
  })
  async onTreeGrown(event: TreeGrown): Promise<void> {
    this.grown.push(event.treeId);
  }
}

describe('a body nested 20 000 deep', () => {
  let broker: TestBroker;
  let app: INestApplication<Server>;
  let base: string;
  let auditDir: string;
  let exchange: string;

  beforeAll(async () => {
    auditDir = mkdtempSync(join(tmpdir(), 'deep-json-'));
    broker = await TestBroker.connect();
    broker.track(QUEUE, `${QUEUE}.dlq`);
    exchange = broker.name('events');

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange,
          connectionName: `${broker.prefix}.deep-json`,
          deadLetterAuditFile: join(auditDir, 'audit.jsonl'),
        }),
        DeadLetterAdminModule.register({ tokens: { ops: TOKEN } }),
      ],
      providers: [TreeHandler],
    })
    class DeepJsonSpecModule {}

    app = await NestFactory.create(DeepJsonSpecModule, { logger: false, abortOnError: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/admin/dead-letters`;
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    rmSync(auditDir, { recursive: true, force: true });
  });

  async function call(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const response = await fetch(`${base}/${path}`, {
      method,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  }

  function properties(id: string): Options.Publish {
    return {
      messageId: id,
      type: 'tree.grown',
      contentType: 'application/json',
      persistent: true,
      headers: { [HEADERS.idempotencyKey]: `tree:${id}`, [HEADERS.schemaVersion]: '1.0' },
    };
  }

  it('is dead-lettered at once as json-too-deep, on attempt 1, and the next message is handled', async () => {
    expect(DEEP_BODY.length).toBeGreaterThan(40_000);
    expect(DEEP_BODY.length).toBeLessThan(41_000);
    await broker.publishRaw({ exchange, routingKey: 'tree.grown' }, DEEP_BODY, properties('deep-1'));
    await broker.publishRaw(
      { exchange, routingKey: 'tree.grown' },
      '{"treeId":"t-after","root":{"branches":[{}]}}',
      properties('after-1'),
    );

    await waitFor('the message after it to be handled', () => app.get(TreeHandler).grown.includes('t-after'));
    await waitFor('the dead letter', async () => (await broker.queueDepth(`${QUEUE}.dlq`)) === 1);
    const { status, json } = await call('GET', `messages/${QUEUE}/deep-1`);

    expect(status).toBe(200);
    expect(json).toMatchObject({
      messageId: 'deep-1',
      queue: QUEUE,
      reason: 'json-too-deep',
      errorClass: 'InvalidMessageError',
      errorMessage: expect.stringMatching(
        /root\.0\.0.* nests deeper than 32 levels \(jsonLimits\.maxDepth\)$/,
      ),
      attempts: 1,
      bodyEncoding: 'utf-8',
      bodyNote: expect.stringMatching(/^not JSON within limits: root\.0\.0.* nests deeper than 32 levels$/),
      body: DEEP_BODY,
      headers: expect.objectContaining({ [DEAD_LETTER_HEADERS.attempts]: 1 }),
    });
    expect(app.get(TreeHandler).grown).toEqual(['t-after']);
  });

  it('lists the dead letter (200) and refuses an edit that keeps the depth with a 400 naming the limit', async () => {
    const listed = await call('GET', `messages?queue=${encodeURIComponent(QUEUE)}`);
    expect(listed.status).toBe(200);
    expect(listed.json.deadLetters).toEqual([
      expect.objectContaining({ messageId: 'deep-1', reason: 'json-too-deep' }),
    ]);

    const asText = await call('POST', `messages/${QUEUE}/deep-1/edit`, { body: DEEP_BODY, dryRun: true });
    expect(asText.status).toBe(400);
    expect(asText.json.message).toMatch(
      /json-too-deep: .*nests deeper than 32 levels \(jsonLimits\.maxDepth\)/,
    );

    const asJson = await call('POST', `messages/${QUEUE}/deep-1/edit`, `{"body":${DEEP_BODY},"dryRun":true}`);
    expect(asJson.status).toBe(400);

    const fixed = await call('POST', `messages/${QUEUE}/deep-1/edit`, {
      body: { treeId: 't-deep', root: { branches: [] } },
      dryRun: true,
    });
    expect(fixed.status).toBe(200);
    expect(await broker.queueDepth(`${QUEUE}.dlq`)).toBe(1);
  });
});
