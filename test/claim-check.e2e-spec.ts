import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import {
  Consume,
  HEADERS,
  type MessageContext,
  MessageType,
  NonRetryableError,
  PayloadTooLargeError,
  type ReliableMessagingModuleOptions,
} from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import {
  ClaimCheckPruner,
  ClaimCheckStoreUnavailableError,
  FILESYSTEM_STORE_MARKER,
  FilesystemClaimCheckStore,
  PostgresClaimCheckStore,
  S3ClaimCheckStore,
  type ClaimCheckStore,
} from 'nestjs-reliable-messaging/claim-check';
import { DeadLetterOperations, ReliableMessagingAdminModule } from 'nestjs-reliable-messaging-admin';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { S3TestServer } from './support/s3-test-server';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

const WIRE_LIMIT = 16 * 1024;
const CLAIM_LIMIT = 256 * 1024;

@MessageType({
  type: 'document.filed',
  idempotencyKey: (m: DocumentFiled) => `document:${m.id}`,
  claimCheck: { thresholdBytes: 1024 },
})
class DocumentFiled {
  @IsString() id!: string;
  @IsString() text!: string;
}

@MessageType({
  type: 'order.noted',
  idempotencyKey: (m: OrderNoted) => `order-noted:${m.orderId}`,
  claimCheck: { thresholdBytes: 512, field: 'note' },
})
class OrderNoted {
  @IsString() orderId!: string;
  @IsString() note!: string;
}

interface Seen {
  id: string;
  attempt: number;
  textSha256: string;
  headers: Record<string, unknown>;
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A text of `bytes` ASCII bytes that no compression or dedup could fake. */
function largeText(bytes: number): string {
  return randomBytes(Math.ceil(bytes / 2))
    .toString('hex')
    .slice(0, bytes);
}

/** A UUID v7 made `msAgo` milliseconds ago, as the module names bodies. */
function uuidV7(msAgo = 0): string {
  const hex = (Date.now() - msAgo).toString(16).padStart(12, '0') + randomBytes(10).toString('hex');
  const v = `${hex.slice(0, 12)}7${hex.slice(13, 16)}${'89ab'[parseInt(hex[16], 16) % 4]}${hex.slice(17, 32)}`;
  return `${v.slice(0, 8)}-${v.slice(8, 12)}-${v.slice(12, 16)}-${v.slice(16, 20)}-${v.slice(20, 32)}`;
}

function handlerFor(documents: string, orders: string) {
  @Injectable()
  class ClaimCheckHandler {
    readonly documents: Seen[] = [];
    readonly orders: Array<{ orderId: string; note: string; headers: Record<string, unknown> }> = [];
    readonly failOnce = new Set<string>();
    /** Documents whose handler waits for their gate: the consumer (one at a time) takes nothing else meanwhile. */
    readonly gates = new Map<string, Promise<void>>();
    /** Documents whose handler has started: their body was read from the store. */
    readonly entered = new Set<string>();

    @Consume({
      queue: documents,
      queueType: 'classic',
      concurrency: 1,
      retry: { maxAttempts: 2, initialDelayMs: 10 },
    })
    async onDocument(message: DocumentFiled, ctx: MessageContext): Promise<void> {
      this.entered.add(message.id);
      await this.gates.get(message.id);
      this.documents.push({
        id: message.id,
        attempt: ctx.attempt,
        textSha256: sha256(message.text),
        headers: { ...ctx.envelope.headers },
      });
      if (this.failOnce.delete(message.id))
        throw new NonRetryableError(`document ${message.id} refused once`);
    }

    @Consume({ queue: orders, queueType: 'classic' })
    onOrder(message: OrderNoted, ctx: MessageContext): void {
      if (this.failOnce.delete(message.orderId))
        throw new NonRetryableError(`order ${message.orderId} refused once`);
      this.orders.push({
        orderId: message.orderId,
        note: message.note,
        headers: { ...ctx.envelope.headers },
      });
    }

    seen(id: string): Seen[] {
      return this.documents.filter((each) => each.id === id);
    }
  }
  return ClaimCheckHandler;
}

/** One store under test: how the app is configured, how a publish is made, and how the store goes down. */
interface StoreCase {
  kind: string;
  scheme: RegExp;
  setUp(): Promise<{ store: ClaimCheckStore; options: Partial<ReliableMessagingModuleOptions> }>;
  /** Publishes as the app does: through the outbox in a transaction when it has a dataSource. */
  transactional: boolean;
  outage?: { down(): Promise<void>; up(): Promise<void> };
}

let broker: TestBroker;
let db: MessagingDatabase;
let s3: S3TestServer;
let directory: string;

const CASES: StoreCase[] = [
  {
    kind: 'postgres',
    scheme: /^postgres:[0-9a-f-]{36}$/,
    transactional: true,
    async setUp() {
      return { store: new PostgresClaimCheckStore(db.dataSource), options: { dataSource: db.dataSource } };
    },
  },
  {
    kind: 'filesystem',
    scheme: /^file:\d{10}-[0-9a-f-]{36}$/,
    transactional: false,
    async setUp() {
      await mkdir(join(directory, 'bodies'));
      await writeFile(join(directory, 'bodies', FILESYSTEM_STORE_MARKER), '');
      return { store: new FilesystemClaimCheckStore(join(directory, 'bodies')), options: {} };
    },
    outage: {
      // The volume is unmounted: an empty directory where it was mounted, without the store's marker.
      async down() {
        await rename(join(directory, 'bodies'), join(directory, 'bodies.away'));
        await mkdir(join(directory, 'bodies'));
      },
      async up() {
        await rm(join(directory, 'bodies'), { recursive: true });
        await rename(join(directory, 'bodies.away'), join(directory, 'bodies'));
      },
    },
  },
  {
    kind: 's3',
    scheme: /^s3:\/\/rm-claim-check\/bodies\/\d{10}-[0-9a-f-]{36}$/,
    transactional: false,
    async setUp() {
      return {
        store: new S3ClaimCheckStore({ client: s3.client(), bucket: s3.bucket, prefix: 'bodies/' }),
        options: {},
      };
    },
    outage: { down: () => s3.stop(), up: () => s3.start() },
  },
];

beforeAll(async () => {
  broker = await TestBroker.connect();
  db = await createMessagingDatabase([], { admin: true });
  s3 = await S3TestServer.start('rm-claim-check');
  directory = await mkdtemp(join(tmpdir(), 'rm-claim-check-'));
});

afterAll(async () => {
  await broker?.deleteByPrefix();
  await broker?.close();
  await db?.drop();
  await s3?.destroy();
  if (directory) await rm(directory, { recursive: true, force: true });
});

describe.each(CASES)('the claim check on the $kind store', (storeCase) => {
  const documents = uniqueQueue(`claim-${storeCase.kind}.documents`);
  const orders = uniqueQueue(`claim-${storeCase.kind}.orders`);
  const Handler = handlerFor(documents, orders);
  let app: MessagingTestApp;
  let handler: InstanceType<typeof Handler>;
  let store: ClaimCheckStore;
  let registry: Registry;

  beforeAll(async () => {
    const setUp = await storeCase.setUp();
    store = setUp.store;
    registry = new Registry();
    app = await MessagingTestApp.start(broker, {
      providers: [Handler],
      imports: [ReliableMessagingAdminModule],
      options: {
        ...setUp.options,
        exchange: broker.name(`${storeCase.kind}.events`),
        maxPayloadBytes: WIRE_LIMIT,
        metricsRegistry: registry,
        deadLetterAuditFile: join(directory, `${storeCase.kind}-audit.jsonl`),
        claimCheck: { store, maxBodyBytes: CLAIM_LIMIT, pruneIntervalMs: 3_600_000 },
      },
    });
    handler = app.get(Handler);
  });

  afterAll(async () => {
    await app?.close();
  });

  async function publish(message: object): Promise<void> {
    if (!storeCase.transactional) {
      await app.publisher.publish(message);
      return;
    }
    await db.dataSource.transaction((manager) => app.publisher.publish(message, { manager }));
  }

  async function deadLetters() {
    return (await app.get(DeadLetterOperations).list({ queue: documents })).deadLetters;
  }

  /** The dead letter of document `id`, once it is in the dead-letter queue. */
  async function deadLetterOf(id: string) {
    const key = `document:${id}`;
    await waitFor(`document ${id} dead-lettered`, async () =>
      (await deadLetters()).some((each) => each.idempotencyKey === key),
    );
    return (await deadLetters()).find((each) => each.idempotencyKey === key)!;
  }

  function document(id: string, text: string): DocumentFiled {
    return Object.assign(new DocumentFiled(), { id, text });
  }

  async function publishReference(id: string, headers: Record<string, unknown>): Promise<void> {
    await broker.publishRaw({ queue: documents }, '', {
      messageId: uuidV7(),
      type: 'document.filed',
      contentType: 'application/json',
      headers: {
        [HEADERS.idempotencyKey]: `document:${id}`,
        [HEADERS.schemaVersion]: '1.0',
        [HEADERS.occurredAt]: new Date().toISOString(),
        ...headers,
      },
    });
  }

  it('carries a body above maxPayloadBytes as a reference, and the handler gets it whole and validated', async () => {
    const text = largeText(64 * 1024);
    await publish(Object.assign(new DocumentFiled(), { id: 'large-1', text }));

    await waitFor('the large document', async () => handler.seen('large-1').length === 1);
    const [seen] = handler.seen('large-1');
    expect(seen.textSha256).toBe(sha256(text));
    expect(seen.attempt).toBe(1);
    expect(seen.headers[HEADERS.claimCheck]).toMatch(storeCase.scheme);
    const stored = await store.get(store.locate(seen.headers[HEADERS.claimCheck] as string)!);
    expect(seen.headers[HEADERS.claimCheckBytes]).toBe(stored!.length);
    expect(seen.headers[HEADERS.claimCheckSha256]).toBe(sha256(stored!));
  });

  it('keeps a body under the threshold on the wire, with no reference', async () => {
    await publish(Object.assign(new DocumentFiled(), { id: 'small-1', text: 'short' }));

    await waitFor('the small document', async () => handler.seen('small-1').length === 1);
    expect(handler.seen('small-1')[0].headers[HEADERS.claimCheck]).toBeUndefined();
  });

  it('stores only the marked field of a message and puts it back before the handler runs', async () => {
    const note = largeText(8 * 1024);
    await publish(Object.assign(new OrderNoted(), { orderId: 'o-1', note }));

    await waitFor('the order with its note', async () => handler.orders.some((o) => o.orderId === 'o-1'));
    const order = handler.orders.find((o) => o.orderId === 'o-1')!;
    expect(order.note).toBe(note);
    expect(order.headers[HEADERS.claimCheckField]).toBe('note');
    expect(order.headers[HEADERS.claimCheckBytes]).toBe(JSON.stringify(note).length);
  });

  it('refuses to publish a body above claimCheck.maxBodyBytes, storing and sending nothing', async () => {
    const before = (await store.stats()).bodies;
    await expect(
      publish(Object.assign(new DocumentFiled(), { id: 'huge-1', text: largeText(CLAIM_LIMIT + 1) })),
    ).rejects.toThrow(PayloadTooLargeError);
    expect((await store.stats()).bodies).toBe(before);
  });

  it.each([
    ['another bucket', 's3://someone-elses-bucket/bodies/1767225600-01890000-0000-7000-8000-000000000000'],
    ['a path with ..', 'file:../../etc/passwd'],
    ['a URL', 'https://attacker.example/body.json'],
    ['a SQL fragment', "postgres:1' OR '1'='1"],
  ])(
    'dead-letters a forged reference to %s as claim-check-forged, without retrying',
    async (_what, reference) => {
      const id = `forged-${randomBytes(3).toString('hex')}`;
      await publishReference(id, {
        [HEADERS.claimCheck]: reference,
        [HEADERS.claimCheckBytes]: 10,
        [HEADERS.claimCheckSha256]: sha256('x'),
      });

      await waitFor('the forged reference dead-lettered', async () =>
        (await deadLetters()).some((each) => each.idempotencyKey === `document:${id}`),
      );
      const letter = (await deadLetters()).find((each) => each.idempotencyKey === `document:${id}`)!;
      expect(letter).toMatchObject({ reason: 'claim-check-forged', attempts: 1 });
      expect(handler.seen(id)).toEqual([]);
    },
  );

  it('dead-letters a reference whose body is not in the store as claim-check-missing', async () => {
    const info = { id: uuidV7(), expiresAt: new Date(Date.now() + 3_600_000), messageType: 'document.filed' };
    await publishReference('missing-1', {
      [HEADERS.claimCheck]: store.referenceFor(info),
      [HEADERS.claimCheckBytes]: 10,
      [HEADERS.claimCheckSha256]: sha256('x'),
    });

    await waitFor('the missing body dead-lettered', async () =>
      (await deadLetters()).some((each) => each.idempotencyKey === 'document:missing-1'),
    );
    const letter = (await deadLetters()).find((each) => each.idempotencyKey === 'document:missing-1')!;
    expect(letter.reason).toBe('claim-check-missing');
  });

  it('dead-letters a body whose SHA-256 does not match its headers as claim-check-corrupt', async () => {
    const info = { id: uuidV7(), expiresAt: new Date(Date.now() + 3_600_000), messageType: 'document.filed' };
    const reference = store.referenceFor(info);
    const body = Buffer.from(JSON.stringify({ id: 'corrupt-1', text: 'tampered with' }));
    await store.put(store.locate(reference)!, body, info);
    await publishReference('corrupt-1', {
      [HEADERS.claimCheck]: reference,
      [HEADERS.claimCheckBytes]: body.length,
      [HEADERS.claimCheckSha256]: sha256('what the publisher sent'),
    });

    await waitFor('the corrupt body dead-lettered', async () =>
      (await deadLetters()).some((each) => each.idempotencyKey === 'document:corrupt-1'),
    );
    const letter = (await deadLetters()).find((each) => each.idempotencyKey === 'document:corrupt-1')!;
    expect(letter.reason).toBe('claim-check-corrupt');
    expect(handler.seen('corrupt-1')).toEqual([]);
  });

  it('dead-letters a reference to a stored body larger than it declares as claim-check-corrupt at once, the body unread', async () => {
    const info = { id: uuidV7(), expiresAt: new Date(Date.now() + 3_600_000), messageType: 'document.filed' };
    const reference = store.referenceFor(info);
    await store.put(store.locate(reference)!, Buffer.alloc(CLAIM_LIMIT - 1, 120), info);
    await publishReference('oversized-1', {
      [HEADERS.claimCheck]: reference,
      [HEADERS.claimCheckBytes]: 10,
      [HEADERS.claimCheckSha256]: sha256('0123456789'),
    });

    const letter = await deadLetterOf('oversized-1');
    expect(letter).toMatchObject({ reason: 'claim-check-corrupt', attempts: 1 });
    expect(letter.errorMessage).toContain(
      `holds ${CLAIM_LIMIT - 1} bytes where the message declares 10; the body was not read`,
    );
    expect(handler.seen('oversized-1')).toEqual([]);
  });

  if (storeCase.kind === 'filesystem') {
    it.each([
      ['a symbolic link to a file outside the store', 'link'],
      ['a directory', 'directory'],
    ])(
      'dead-letters a reference whose name in the store is %s as claim-check-unreadable at once, never an outage',
      async (_what, entry) => {
        const id = `unreadable-${entry}`;
        const body = Buffer.from(JSON.stringify({ id, text: 'read through a link' }));
        const info = {
          id: uuidV7(),
          expiresAt: new Date(Date.now() + 3_600_000),
          messageType: 'document.filed',
        };
        const reference = store.referenceFor(info);
        const path = join(directory, 'bodies', store.locate(reference)!);
        if (entry === 'link') {
          await writeFile(join(directory, `${id}.json`), body);
          await symlink(join(directory, `${id}.json`), path);
        } else {
          await mkdir(path);
        }
        await publishReference(id, {
          [HEADERS.claimCheck]: reference,
          [HEADERS.claimCheckBytes]: body.length,
          [HEADERS.claimCheckSha256]: sha256(body),
        });

        const letter = await deadLetterOf(id);
        expect(letter).toMatchObject({ reason: 'claim-check-unreadable', attempts: 1 });
        expect(handler.seen(id)).toEqual([]);
      },
    );
  }

  if (storeCase.kind === 'postgres') {
    it('reads the size of a PostgreSQL body first: a row of another size answers without its body', async () => {
      const dataSource = await db.connect(1);
      const answered: unknown[] = [];
      const query = dataSource.manager.query.bind(dataSource.manager);
      dataSource.manager.query = (async (sql: string, parameters?: unknown[]) => {
        const rows = await query<unknown[]>(sql, parameters);
        answered.push(...rows);
        return rows;
      }) as typeof dataSource.manager.query;
      const reader = new PostgresClaimCheckStore(dataSource);
      const info = {
        id: uuidV7(),
        expiresAt: new Date(Date.now() + 3_600_000),
        messageType: 'document.filed',
      };
      await reader.put(info.id, Buffer.alloc(4 * 1024 * 1024, 120), info);
      answered.length = 0;

      await expect(reader.get(info.id, 10)).rejects.toThrow(
        'claim-check-corrupt: the postgres claim-check store holds 4194304 bytes where the message declares 10',
      );
      expect(answered).toEqual([{ bytes: 4194304, body: null }]);
      expect((await reader.get(info.id, 4 * 1024 * 1024))?.length).toBe(4 * 1024 * 1024);
    });
  }

  it('replays a claim-checked dead letter from the admin operations, and the handler gets the whole body', async () => {
    const text = largeText(32 * 1024);
    handler.failOnce.add('replay-1');
    await publish(Object.assign(new DocumentFiled(), { id: 'replay-1', text }));
    await waitFor('the document dead-lettered', async () =>
      (await deadLetters()).some((each) => each.idempotencyKey === 'document:replay-1'),
    );

    const result = await app
      .get(DeadLetterOperations)
      .replay(
        { queue: documents, type: 'document.filed', errorClass: 'NonRetryableError' },
        { actor: 'spec' },
      );

    expect(result.failures).toEqual([]);
    await waitFor('the replayed document handled', async () => handler.seen('replay-1').length === 2);
    expect(handler.seen('replay-1').map((each) => each.textSha256)).toEqual([sha256(text), sha256(text)]);
  });

  it("gives a dead letter its own copy of the body: replayed after the original's is gone, the handler gets it whole", async () => {
    const text = largeText(16 * 1024);
    handler.failOnce.add('dl-copy-1');
    await publish(document('dl-copy-1', text));
    const letter = await deadLetterOf('dl-copy-1');
    const original = handler.seen('dl-copy-1')[0].headers[HEADERS.claimCheck] as string;
    const copy = String(letter.headers[HEADERS.claimCheck]);
    expect(copy).toMatch(storeCase.scheme);
    expect(copy).not.toBe(original);
    expect(String(letter.headers[DEAD_LETTER_HEADERS.claimCheckCopy])).toBe(copy);
    expect(await store.get(store.locate(copy)!)).toEqual(await store.get(store.locate(original)!));

    // The original body expires (claimCheck.timeToLiveMs) while the dead letter waits.
    await store.delete(store.locate(original)!);
    const shown = await app.get(DeadLetterOperations).show(letter.messageId!, documents);
    expect(JSON.parse(shown.fullBody!.toString('utf8'))).toEqual({ id: 'dl-copy-1', text });
    const result = await app
      .get(DeadLetterOperations)
      .replay({ queue: documents, messageIds: [letter.messageId!] }, { actor: 'spec' });

    expect(result.failures).toEqual([]);
    await waitFor('the replayed document handled', async () => handler.seen('dl-copy-1').length === 2);
    expect(handler.seen('dl-copy-1')[1].textSha256).toBe(sha256(text));
    expect((await deadLetters()).some((each) => each.idempotencyKey === 'document:dl-copy-1')).toBe(false);
  });

  it('purges a dead letter without deleting the stored bodies its headers name', async () => {
    handler.failOnce.add('dl-purge-1');
    await publish(document('dl-purge-1', largeText(4096)));
    const letter = await deadLetterOf('dl-purge-1');
    const original = handler.seen('dl-purge-1')[0].headers[HEADERS.claimCheck] as string;
    const copy = String(letter.headers[HEADERS.claimCheck]);
    expect(await store.get(store.locate(copy)!)).toBeDefined();

    const result = await app
      .get(DeadLetterOperations)
      .purge({ queue: documents, messageIds: [letter.messageId!] }, { actor: 'spec' });

    expect(result.messageIds).toEqual([letter.messageId]);
    // A header names the copy: anyone could have written it, so a purge deletes nothing it names.
    expect(await store.get(store.locate(copy)!)).toBeDefined();
    expect(await store.get(store.locate(original)!)).toBeDefined();
  });

  // The edit does not depend on the store.
  if (storeCase.transactional) {
    it('edits a dead letter whose property was claim-checked only as a whole message, leaving its copy to the pruner', async () => {
      const operations = app.get(DeadLetterOperations);
      const note = largeText(2048);
      handler.failOnce.add('o-edit-1');
      await publish(Object.assign(new OrderNoted(), { orderId: 'o-edit-1', note }));
      await waitFor('the order dead-lettered', async () =>
        (await operations.list({ queue: orders })).deadLetters.some(
          (each) => each.idempotencyKey === 'order-noted:o-edit-1',
        ),
      );
      const letter = (await operations.list({ queue: orders })).deadLetters.find(
        (each) => each.idempotencyKey === 'order-noted:o-edit-1',
      )!;
      const copy = String(letter.headers[HEADERS.claimCheck]);
      const shown = await operations.show(letter.messageId!, orders);
      expect(JSON.parse(shown.fullBody!.toString('utf8'))).toEqual({ orderId: 'o-edit-1', note });

      await expect(
        operations.editAndReplay(orders, letter.messageId!, Buffer.from('{"orderId":"o-edit-1"}'), {
          actor: 'spec',
        }),
      ).rejects.toThrow("the dead letter's 'note' is kept in the claim-check store");
      const edited = { orderId: 'o-edit-1', note: 'a shorter note' };
      const result = await operations.editAndReplay(
        orders,
        letter.messageId!,
        Buffer.from(JSON.stringify(edited)),
        { actor: 'spec' },
      );

      expect(result.failures).toEqual([]);
      await waitFor('the edited order handled', async () =>
        handler.orders.some((o) => o.orderId === 'o-edit-1'),
      );
      expect(handler.orders.find((o) => o.orderId === 'o-edit-1')!.note).toBe('a shorter note');
      expect(await store.get(store.locate(copy)!)).toBeDefined();
    });
  }

  it('prunes expired bodies in batches, leaves live ones, and the metrics show the store', async () => {
    const expired = {
      id: uuidV7(60_000),
      expiresAt: new Date(Date.now() - 1000),
      messageType: 'document.filed',
    };
    const location = store.locate(store.referenceFor(expired))!;
    await store.put(location, Buffer.from('{"expired":true}'), expired);
    const before = await store.stats();

    const gauge = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value;
    expect(await gauge('rm_claim_check_bodies')).toBe(before.bodies);
    expect(await gauge('rm_claim_check_bytes')).toBe(before.bytes);
    expect(await gauge('rm_claim_check_oldest_age_seconds')).toBeGreaterThanOrEqual(59);

    expect(await app.get(ClaimCheckPruner).pruneNow()).toBe(1);
    expect(await store.get(location)).toBeUndefined();
    expect((await store.stats()).bodies).toBe(before.bodies - 1);
    const [large] = handler.seen('large-1');
    expect(await store.get(store.locate(large.headers[HEADERS.claimCheck] as string)!)).toBeDefined();
  });

  if (storeCase.transactional) {
    it('writes the body in the outbox row transaction: a rollback leaves neither', async () => {
      const before = (await store.stats()).bodies;
      await expect(
        db.dataSource.transaction(async (manager) => {
          await app.publisher.publish(
            Object.assign(new DocumentFiled(), { id: 'rolled-back', text: largeText(4096) }),
            { manager },
          );
          expect(
            (await manager.query<Array<{ n: number }>>('SELECT count(*)::int AS n FROM rm_claim_check'))[0].n,
          ).toBe(before + 1);
          throw new Error('the business change failed');
        }),
      ).rejects.toThrow('the business change failed');
      expect((await store.stats()).bodies).toBe(before);
      expect(
        await db.dataSource.query(`SELECT 1 FROM rm_outbox WHERE properties::text LIKE '%rolled-back%'`),
      ).toEqual([]);
    });
  }

  const outage = storeCase.outage;
  if (outage) {
    it('fails a publish clearly while the store is down, sending nothing', async () => {
      await outage.down();
      try {
        await expect(
          publish(Object.assign(new DocumentFiled(), { id: 'unsent-1', text: largeText(4096) })),
        ).rejects.toThrow(ClaimCheckStoreUnavailableError);
      } finally {
        await outage.up();
      }
      // The consumer handles one message at a time, in queue order: had the first been sent, it came first.
      await publish(Object.assign(new DocumentFiled(), { id: 'sentinel-1', text: 'after the outage' }));
      await waitFor('the sentinel', async () => handler.seen('sentinel-1').length === 1);
      expect(handler.seen('unsent-1')).toEqual([]);
    });

    it('holds a delivery whose dead letter cannot copy its body while the store is down, and dead-letters it with the copy after', async () => {
      const text = largeText(4096);
      const holding = () =>
        app.logger.find('warn', /dead-lettering a message of .*holding the message/).length;
      const heldBefore = holding();
      let open!: () => void;
      handler.gates.set('dl-held-1', new Promise<void>((resolve) => (open = resolve)));
      handler.failOnce.add('dl-held-1');
      await publish(document('dl-held-1', text));
      await waitFor('the handler to have the body', async () => handler.entered.has('dl-held-1'));
      await outage.down();
      try {
        open();
        await waitFor('the dead letter to wait for the store', async () => holding() > heldBefore);
        expect((await deadLetters()).some((each) => each.idempotencyKey === 'document:dl-held-1')).toBe(
          false,
        );
      } finally {
        await outage.up();
      }

      const letter = await deadLetterOf('dl-held-1');
      const original = handler.seen('dl-held-1')[0].headers[HEADERS.claimCheck] as string;
      const copy = String(letter.headers[HEADERS.claimCheck]);
      expect(copy).not.toBe(original);
      expect(letter).toMatchObject({ reason: 'non-retryable', attempts: 1 });
      const body = await store.get(store.locate(copy)!);
      expect(JSON.parse(body!.toString('utf8'))).toEqual({ id: 'dl-held-1', text });
      expect(handler.seen('dl-held-1')).toHaveLength(1);
    });

    it('holds a delivery while the store is down at consume time, spending no attempt, and handles it after', async () => {
      const text = largeText(4096);
      const warnings = () => app.logger.find('warn', /claim-check store is unavailable/).length;
      const warnedBefore = warnings();
      let open!: () => void;
      handler.gates.set('gate-1', new Promise<void>((resolve) => (open = resolve)));
      await publish(Object.assign(new DocumentFiled(), { id: 'gate-1', text: 'holds the consumer' }));
      await publish(Object.assign(new DocumentFiled(), { id: 'held-1', text }));
      await outage.down();
      open();
      await waitFor('the consumer to wait for the store', async () => warnings() > warnedBefore);
      expect(handler.seen('held-1')).toEqual([]);
      await outage.up();

      await waitFor('the held document handled', async () => handler.seen('held-1').length === 1);
      expect(handler.seen('held-1')[0]).toMatchObject({ attempt: 1, textSha256: sha256(text) });
      expect((await deadLetters()).some((each) => each.idempotencyKey === 'document:held-1')).toBe(false);
    });
  }
});
