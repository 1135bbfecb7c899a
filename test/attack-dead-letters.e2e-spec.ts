import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Consume, HEADERS, MessageType } from 'nestjs-reliable-messaging';
import { ConsumerRegistry, DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { ClaimCheckPruner, PostgresClaimCheckStore } from 'nestjs-reliable-messaging/claim-check';
import {
  DeadLetterOperations,
  InvalidDeadLetterQueryError,
  ReliableMessagingAdminModule,
} from 'nestjs-reliable-messaging-admin';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/**
 * The attack suite for dead letters: anyone who can publish to the broker writes any header, so forged dead
 * letters (made by the broker from an expired message, or published straight to the dead-letter exchange) must
 * never steer a replay, an edit or a purge to another queue or another message's stored body.
 */

@MessageType({
  type: 'document.filed',
  idempotencyKey: (m: DocumentFiled) => `document:${m.id}`,
  claimCheck: { thresholdBytes: 1024 },
})
class DocumentFiled {
  @IsString() id!: string;
  @IsString() text!: string;
}

const DOCUMENTS = uniqueQueue('attack.documents');
const LOCKED = uniqueQueue('attack.locked');

@Injectable()
class DocumentHandler {
  @Consume({ queue: DOCUMENTS, queueType: 'classic' })
  onDocument(_message: DocumentFiled): void {}

  @Consume({ queue: LOCKED, queueType: 'classic' })
  onLocked(_message: DocumentFiled): void {}
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A UUID v7 made now, as the module names bodies. */
function uuidV7(): string {
  const hex = Date.now().toString(16).padStart(12, '0') + randomBytes(10).toString('hex');
  const v = `${hex.slice(0, 12)}7${hex.slice(13, 16)}${'89ab'[parseInt(hex[16], 16) % 4]}${hex.slice(17, 32)}`;
  return `${v.slice(0, 8)}-${v.slice(8, 12)}-${v.slice(12, 16)}-${v.slice(16, 20)}-${v.slice(20, 32)}`;
}

describe('forged dead letters against the real broker, PostgreSQL store and admin operations', () => {
  let broker: TestBroker;
  let db: MessagingDatabase;
  let directory: string;
  let app: MessagingTestApp;
  let store: PostgresClaimCheckStore;
  let operations: DeadLetterOperations;
  let victim: string;
  let foreignDeadLetterQueue: string;
  let deadLetterExchange: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    db = await createMessagingDatabase([], { admin: true });
    directory = await mkdtemp(join(tmpdir(), 'rm-attack-'));
    store = new PostgresClaimCheckStore(db.dataSource);
    const exchange = broker.name('events');
    deadLetterExchange = `${exchange}.dead-letter`;
    app = await MessagingTestApp.start(broker, {
      providers: [DocumentHandler],
      imports: [ReliableMessagingAdminModule],
      options: {
        exchange,
        dataSource: db.dataSource,
        deadLetterAuditFile: join(directory, 'audit.jsonl'),
        claimCheck: { store, pruneIntervalMs: 3_600_000 },
      },
    });
    // NOTE: no consumer runs: a forged message sent with `expiration: '1'` is then dead-lettered by the broker
    // itself (never by the module, which would rewrite its headers), and replays stay in the queue to be counted.
    await app.get(ConsumerRegistry).stopAll(Date.now() + 5000);
    operations = app.get(DeadLetterOperations);

    // The victim: another service's queue on the same virtual host, and its dead-letter queue.
    victim = broker.name('billing.commands');
    foreignDeadLetterQueue = `${victim}.dlq`;
    broker.track(foreignDeadLetterQueue);
    const channel = await broker.openChannel();
    await channel.assertQueue(victim, { durable: true });
    await channel.assertQueue(foreignDeadLetterQueue, { durable: true });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  /** Stores a body as the publisher of another message did; resolves with its reference and location. */
  async function storeBody(text: string, expiresAt = new Date(Date.now() + 3_600_000)) {
    const body = Buffer.from(JSON.stringify({ id: `other-${randomBytes(3).toString('hex')}`, text }));
    const info = { id: uuidV7(), expiresAt, messageType: 'document.filed' };
    const reference = store.referenceFor(info);
    const location = store.locate(reference)!;
    await store.put(location, body, info);
    return { body, reference, location };
  }

  /** Headers a forger writes: every dead-letter header pointing at the victim, the claim check at `reference`. */
  function forgedHeaders(id: string, other: { body: Buffer; reference: string }): Record<string, unknown> {
    return {
      [HEADERS.idempotencyKey]: `document:${id}`,
      [HEADERS.schemaVersion]: '1.0',
      [HEADERS.occurredAt]: new Date().toISOString(),
      [HEADERS.claimCheck]: other.reference,
      [HEADERS.claimCheckBytes]: other.body.length,
      [HEADERS.claimCheckSha256]: sha256(other.body),
      [DEAD_LETTER_HEADERS.queue]: victim,
      [DEAD_LETTER_HEADERS.exchange]: '',
      [DEAD_LETTER_HEADERS.routingKey]: victim,
      [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
      [DEAD_LETTER_HEADERS.claimCheckCopy]: other.reference,
    };
  }

  /** Route (a): a message sent to this app's queue that the broker dead-letters at once (it expires). */
  async function forgeByExpiry(id: string, headers: Record<string, unknown>): Promise<string> {
    const messageId = uuidV7();
    await broker.publishRaw({ queue: DOCUMENTS }, '', {
      messageId,
      type: 'document.filed',
      contentType: 'application/json',
      expiration: '1',
      headers,
    });
    await waitForDeadLetter(messageId);
    return messageId;
  }

  /** Route (b): a message published straight to the dead-letter exchange, which routes it into DOCUMENTS.dlq. */
  async function forgeByDeadLetterExchange(headers: Record<string, unknown>): Promise<string> {
    const messageId = uuidV7();
    await broker.publishRaw({ exchange: deadLetterExchange, routingKey: DOCUMENTS }, '', {
      messageId,
      type: 'document.filed',
      contentType: 'application/json',
      headers,
    });
    await waitForDeadLetter(messageId);
    return messageId;
  }

  async function waitForDeadLetter(messageId: string): Promise<void> {
    await waitFor(`dead letter ${messageId}`, async () =>
      (await operations.list({ queue: DOCUMENTS })).deadLetters.some((each) => each.messageId === messageId),
    );
  }

  async function victimDepth(): Promise<number> {
    return broker.queueDepth(victim);
  }

  it('lists a forged dead letter under the queue it sits in, its header only as a flagged claim', async () => {
    const other = await storeBody('list');
    const messageId = await forgeByExpiry('forged-list', forgedHeaders('forged-list', other));

    const found = (await operations.list({ queue: DOCUMENTS })).deadLetters.find(
      (each) => each.messageId === messageId,
    )!;

    expect(found).toMatchObject({ queue: DOCUMENTS, claimedQueue: victim });
    await operations.purge({ queue: DOCUMENTS, messageIds: [messageId] }, { actor: 'spec' });
  });

  it('edits and replays a forged dead letter (either route) only into its own queue, validated by its class', async () => {
    const other = await storeBody('edit');
    const byExpiry = await forgeByExpiry('forged-edit-a', forgedHeaders('forged-edit-a', other));
    const byExchange = await forgeByDeadLetterExchange(forgedHeaders('forged-edit-b', other));

    await expect(
      operations.editAndReplay(DOCUMENTS, byExpiry, Buffer.from('{"amount":1000000}'), { actor: 'spec' }),
    ).rejects.toThrow(InvalidDeadLetterQueryError);
    for (const messageId of [byExpiry, byExchange]) {
      const result = await operations.editAndReplay(
        DOCUMENTS,
        messageId,
        Buffer.from(JSON.stringify({ id: messageId, text: 'edited' })),
        { actor: 'spec' },
      );
      expect(result.failures).toEqual([]);
    }

    expect(await victimDepth()).toBe(0);
    const replayed = await broker.getAll(DOCUMENTS);
    expect(replayed.map((message) => String(message.properties.messageId)).sort()).toEqual(
      [byExpiry, byExchange].sort(),
    );
    expect(replayed.every((message) => message.fields.routingKey === DOCUMENTS)).toBe(true);
    expect(await store.get(other.location)).toEqual(other.body);
  });

  it("purges forged dead letters naming another message's body without deleting that body", async () => {
    const other = await storeBody('purge');
    const byExpiry = await forgeByExpiry('forged-purge-a', forgedHeaders('forged-purge-a', other));
    const byExchange = await forgeByDeadLetterExchange(forgedHeaders('forged-purge-b', other));

    const result = await operations.purge(
      { queue: DOCUMENTS, messageIds: [byExpiry, byExchange] },
      { actor: 'spec' },
    );

    expect(result.messageIds.sort()).toEqual([byExpiry, byExchange].sort());
    expect(await store.get(other.location)).toEqual(other.body);
  });

  it('replays every forged dead letter only into its own queue, each with a body of its own', async () => {
    const other = await storeBody('replay');
    const forged = [
      await forgeByExpiry('forged-replay-a', forgedHeaders('forged-replay-a', other)),
      await forgeByDeadLetterExchange(forgedHeaders('forged-replay-b', other)),
    ];

    const result = await operations.replay({ queue: DOCUMENTS, all: true }, { actor: 'spec' });

    expect(result.failures).toEqual([]);
    expect(result.messageIds).toEqual(expect.arrayContaining(forged));
    expect(await victimDepth()).toBe(0);
    const replayed = await broker.getAll(DOCUMENTS);
    expect(replayed.map((message) => String(message.properties.messageId))).toEqual(
      expect.arrayContaining(forged),
    );
    for (const message of replayed) {
      expect(message.fields.routingKey).toBe(DOCUMENTS);
      // An unedited replay carries a copy of its own, not the reference its dead letter held.
      const reference = String(message.properties.headers?.[HEADERS.claimCheck]);
      expect(reference).not.toBe(other.reference);
      expect(await store.get(store.locate(reference)!)).toEqual(other.body);
      expect(message.properties.headers?.[DEAD_LETTER_HEADERS.claimCheckCopy]).toBeUndefined();
    }
    expect(await store.get(other.location)).toEqual(other.body);
  });

  it.each([
    ['a foreign dead-letter queue', () => foreignDeadLetterQueue],
    ['a foreign consumer queue', () => victim],
  ])('refuses %s in every tool, before asking the broker', async (_case, queueOf) => {
    const queue = queueOf();
    await broker.publishRaw({ queue: foreignDeadLetterQueue }, '{}', { messageId: uuidV7() });
    const check = (promise: Promise<unknown>) =>
      expect(promise).rejects.toThrow(
        new InvalidDeadLetterQueryError(
          `'${queue}' is not a queue of this app; its queues are: ${DOCUMENTS}, ${LOCKED}`,
        ),
      );

    await check(operations.list({ queue }));
    await check(operations.show(uuidV7(), queue));
    await check(operations.replay({ queue, all: true }, { actor: 'spec' }));
    await check(operations.purge({ queue, all: true }, { actor: 'spec' }));
    await check(operations.editAndReplay(queue, uuidV7(), Buffer.from('{}'), { actor: 'spec' }));

    expect(await broker.queueDepth(foreignDeadLetterQueue)).toBe(1);
    await broker.getAll(foreignDeadLetterQueue);
  });

  it('keeps an expired body while any dead letter refers to it, duplicates included, and prunes it after', async () => {
    const expired = await storeBody('expired', new Date(Date.now() - 1000));
    const headers = {
      [HEADERS.claimCheck]: expired.reference,
      [HEADERS.claimCheckBytes]: expired.body.length,
      [HEADERS.claimCheckSha256]: sha256(expired.body),
      // As the broker writes it for a message it dead-lettered itself (the delivery-limit backstop).
      'x-death': [{ queue: DOCUMENTS, reason: 'delivery_limit', count: 1 }],
    };
    const first = await forgeByDeadLetterExchange(headers);
    const duplicate = await forgeByDeadLetterExchange(headers);
    const pruner = app.get(ClaimCheckPruner);

    await pruner.pruneNow();
    expect(await store.get(expired.location)).toEqual(expired.body);

    await operations.purge({ queue: DOCUMENTS, messageIds: [first] }, { actor: 'spec' });
    await pruner.pruneNow();
    expect(await store.get(expired.location)).toEqual(expired.body);

    await operations.purge({ queue: DOCUMENTS, messageIds: [duplicate] }, { actor: 'spec' });
    await pruner.pruneNow();
    expect(await store.get(expired.location)).toBeUndefined();
  });

  it('deletes nothing in a round whose dead-letter queues cannot all be read', async () => {
    const expired = await storeBody('unread', new Date(Date.now() - 1000));
    // Another connection's exclusive queue in the place of LOCKED.dlq: the pruner's read of it is refused.
    const channel = await broker.openChannel();
    await channel.deleteQueue(`${LOCKED}.dlq`);
    await channel.assertQueue(`${LOCKED}.dlq`, { exclusive: true });

    await expect(app.get(ClaimCheckPruner).pruneNow()).rejects.toThrow(LOCKED);

    expect(await store.get(expired.location)).toEqual(expired.body);
    await channel.deleteQueue(`${LOCKED}.dlq`);
  });
});
