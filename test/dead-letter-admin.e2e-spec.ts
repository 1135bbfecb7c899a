import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IsString } from 'class-validator';
import { Consume, MessagePublisher, MessageType, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { DeadLetterAdminModule } from 'nestjs-reliable-messaging-admin';
import { uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'refund.requested', idempotencyKey: (m: RefundRequested) => `refund:${m.refundId}` })
class RefundRequested {
  @IsString() refundId!: string;
}

class BankRejected extends Error {}

const TOKEN = 'd32c3b4640ca154fa4bdd44cadbd10b04e5e8726';
const MAX_BATCH = 5;
const QUEUE = uniqueQueue('refunds');

@Injectable()
class RefundHandler {
  readonly refunded: string[] = [];
  bankDown = true;

  // NOTE: a classic queue, whose depth the broker reports at once (a quorum queue's lags).
  @Consume({ queue: QUEUE, queueType: 'classic', retry: { maxAttempts: 1 } })
  async onRefund(event: RefundRequested): Promise<void> {
    if (this.bankDown) throw new BankRejected(`the bank rejected refund ${event.refundId}`);
    this.refunded.push(event.refundId);
  }
}

describe('the dead-letter admin API', () => {
  let broker: TestBroker;
  let app: INestApplication<Server>;
  let base: string;
  let queue: string;
  let auditDir: string;

  beforeAll(async () => {
    auditDir = mkdtempSync(join(tmpdir(), 'dlq-admin-'));
    broker = await TestBroker.connect();
    queue = QUEUE;
    broker.track(queue, `${queue}.dlq`);

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange: broker.name('events'),
          connectionName: `${broker.prefix}.admin`,
          deadLetterAuditFile: join(auditDir, 'audit.jsonl'),
        }),
        // The refusals below come from one address, more than the default limit of refused tokens allows.
        DeadLetterAdminModule.register({
          tokens: { ops: TOKEN },
          maxBatchSize: MAX_BATCH,
          authFailureLimit: { failures: 100 },
        }),
      ],
      providers: [RefundHandler],
    })
    class AdminSpecModule {}

    app = await NestFactory.create(AdminSpecModule, { logger: false, abortOnError: false });
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

  it.each([
    ['no Authorization header', null],
    ['another scheme', `Basic ${Buffer.from(`ops:${TOKEN}`).toString('base64')}`],
    ['a wrong token', `Bearer ${'x'.repeat(32)}`],
    ['a token that differs in its last character', `Bearer ${TOKEN.slice(0, -1)}7`],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, 16)}`],
  ])('refuses a request with %s (401) and does nothing', async (_what, authorization) => {
    for (const [method, path, body] of [
      ['GET', 'queues', undefined],
      ['GET', 'messages', undefined],
      ['POST', 'purge', { queue, all: true, confirm: true }],
    ] as const) {
      const { status, json } = await call(method, path, body, authorization);
      expect(status).toBe(401);
      expect(json.message).toMatch(/bearer token/);
    }
  });

  it('reports depth and oldest age of each dead-letter queue', async () => {
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    await broker.publishRaw({ queue: `${queue}.dlq` }, '{"refundId":"old-1"}', {
      messageId: 'old-1',
      type: 'refund.requested',
      contentType: 'application/json',
      headers: { [DEAD_LETTER_HEADERS.queue]: queue, [DEAD_LETTER_HEADERS.lastFailureAt]: hourAgo },
    });
    const publisher = app.get(MessagePublisher);
    for (let i = 0; i < 6; i++)
      await publisher.publish(Object.assign(new RefundRequested(), { refundId: `r-${i}` }));
    await waitFor('seven dead letters', async () => (await broker.queueDepth(`${queue}.dlq`)) === 7);

    const { status, json } = await call('GET', 'queues');

    expect(status).toBe(200);
    expect(json.queues).toEqual([
      { queue, deadLetterQueue: `${queue}.dlq`, depth: 7, oldestAgeSeconds: expect.any(Number) },
    ]);
    const [{ oldestAgeSeconds }] = json.queues as Array<{ oldestAgeSeconds: number }>;
    expect(oldestAgeSeconds).toBeGreaterThanOrEqual(3600);
    expect(oldestAgeSeconds).toBeLessThan(3660);
    expect(await broker.queueDepth(`${queue}.dlq`)).toBe(7);
  });

  it(`bounds every request to ${MAX_BATCH} messages and says when more remain`, async () => {
    expect((await call('GET', `messages?queue=${queue}&limit=${MAX_BATCH + 1}`)).status).toBe(400);
    expect((await call('POST', 'replay', { queue, all: true, limit: MAX_BATCH + 1 })).status).toBe(400);

    const listed = await call('GET', `messages?queue=${queue}`);
    expect(listed.status).toBe(200);
    expect(listed.json).toMatchObject({ scanned: MAX_BATCH, more: true });
    expect(listed.json.deadLetters).toHaveLength(MAX_BATCH);
    const shown = await call('GET', `messages/${queue}/old-1`);
    expect(shown.json).toMatchObject({
      messageId: 'old-1',
      body: { refundId: 'old-1' },
      bodyEncoding: 'json',
    });
    expect((await call('GET', `messages/${queue}/no-such-id`)).status).toBe(404);
  });

  it('replays in batches, edits one, refuses a purge without confirm, and audits with the token name', async () => {
    const handler = app.get(RefundHandler);
    handler.bankDown = false;

    const noSelection = await call('POST', 'replay', { queue });
    expect(noSelection.status).toBe(400);
    const first = await call('POST', 'replay', { queue, errorClass: 'BankRejected' });
    const second = await call('POST', 'replay', { queue, errorClass: 'BankRejected', note: 'bank back up' });
    expect(first.json).toMatchObject({ action: 'replay', more: true, failures: [] });
    expect(first.json.messageIds).toHaveLength(MAX_BATCH);
    expect(second.json).toMatchObject({ more: false });
    expect(second.json.messageIds).toHaveLength(1);
    await waitFor('six refunds', () => handler.refunded.length === 6);

    const edited = await call('POST', `messages/${queue}/old-1/edit`, { body: { refundId: 'old-1-fixed' } });
    expect(edited.json).toMatchObject({ action: 'edit-replay', messageIds: ['old-1'] });
    await waitFor('the edited refund', () => handler.refunded.includes('old-1-fixed'));

    await publishFailing('p-1');
    const unconfirmed = await call('POST', 'purge', { queue, all: true });
    expect(unconfirmed.status).toBe(400);
    expect(unconfirmed.json.message).toContain("'confirm: true'");
    const purged = await call('POST', 'purge', { queue, all: true, confirm: true });
    expect(purged.json).toMatchObject({ action: 'purge', dryRun: false, messageIds: [expect.any(String)] });
    expect(await broker.queueDepth(`${queue}.dlq`)).toBe(0);

    const audit = await call('GET', 'audit');
    const records = audit.json.records as Array<{
      action: string;
      actor: string;
      messageCount: number;
      details: object;
    }>;
    expect(records.map((r) => [r.action, r.actor, r.messageCount])).toEqual([
      ['purge', 'token:ops', 1],
      ['edit-replay', 'token:ops', 1],
      ['replay', 'token:ops', 1],
      ['replay', 'token:ops', MAX_BATCH],
      // The show of a dead letter in full above: reads of bodies are audited too.
      ['read', 'token:ops', 1],
    ]);
    expect(records[2].details).toMatchObject({ note: 'bank back up' });

    async function publishFailing(refundId: string): Promise<void> {
      handler.bankDown = true;
      await app.get(MessagePublisher).publish(Object.assign(new RefundRequested(), { refundId }));
      await waitFor('the dead letter', async () => (await broker.queueDepth(`${queue}.dlq`)) === 1);
    }
  });
});
