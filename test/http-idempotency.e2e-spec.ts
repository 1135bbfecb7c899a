import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { ChildApp } from './support/child-app';
import { FIXTURE_ORDERS_TABLE, IdempotencyFixtureApp } from './support/idempotency-app';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { TestBroker } from './support/test-broker';

/**
 * IdempotencyInterceptor in an app wired as apps are (TypeORM, nestjs-cls with its transactional plugin, Nest's
 * default body parser), run as a child process because nestjs-cls cannot load under Jest on Node 20: the options
 * of `@Idempotent()`, the status replayed, a failed handler keeping no key, a `"__proto__"` member in the body,
 * and the start refused without the transactional plugin.
 */
describe('@Idempotent() in a Nest app with nestjs-cls on the module dataSource', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: IdempotencyFixtureApp;

  beforeAll(async () => {
    db = await createMessagingDatabase([FIXTURE_ORDERS_TABLE]);
    broker = await TestBroker.connect();
    app = await IdempotencyFixtureApp.start(db.database, broker);
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('answers 400 to a request without a key on a required route, and does not run it', async () => {
    const ref = randomUUID();

    const answer = await app.send('POST', '/required', { ref });

    expect(answer).toMatchObject({ status: 400, body: { message: ['Idempotency-Key header is required'] } });
    expect(await app.runs(ref)).toBe(0);
  });

  it("replays the route's own status (200 from @HttpCode) and body, running the handler once", async () => {
    const ref = randomUUID();
    const key = randomUUID();

    const first = await app.send('PUT', '/replace', { ref }, key);
    const retry = await app.send('PUT', '/replace', { ref }, key);

    expect(first).toEqual({ status: 200, replayed: null, body: { ref, run: 1 } });
    expect(retry).toEqual({ status: 200, replayed: 'true', body: { ref, run: 1 } });
    expect(await app.runs(ref)).toBe(1);
  });

  it('keeps no key for a handler that threw: the retry with the same key runs it again', async () => {
    const ref = randomUUID();
    const key = randomUUID();

    const failed = await app.send('POST', '/flaky', { ref }, key);
    const retried = await app.send('POST', '/flaky', { ref }, key);
    const replayed = await app.send('POST', '/flaky', { ref }, key);

    expect(failed.status).toBe(500);
    expect(retried).toEqual({ status: 201, replayed: null, body: { ref, ok: true } });
    expect(replayed).toEqual({ status: 201, replayed: 'true', body: { ref, ok: true } });
    expect(await app.runs(ref)).toBe(2);
  });

  it('answers 422 to a key used on another route of the same scope, naming the first request', async () => {
    const key = randomUUID();
    const ref = randomUUID();

    await app.send('POST', '/transfers/a', { ref }, key);
    const other = await app.send('POST', '/transfers/b', { ref }, key);

    expect(other.status).toBe(422);
    expect(other.body.message).toEqual([expect.stringContaining('different request (POST /transfers/a')]);
  });

  it('commits the order and its key in one transaction (the two rows share their xmin)', async () => {
    const key = randomUUID();

    const placed = await app.send('POST', '/orders', { ref: randomUUID() }, key);

    expect(placed.status).toBe(201);
    const rows = await db.dataSource.query<Array<{ same: boolean }>>(
      `SELECT o.xmin::text = k.xmin::text AS same FROM fixture_orders o, rm_idempotency_keys k
        WHERE o.id = $1 AND k.idempotency_key = $2`,
      [placed.body.id, key],
    );
    expect(rows).toEqual([{ same: true }]);
  });

  it('answers 422, running nothing, to the key sent again with another "__proto__" member in the body', async () => {
    const ref = randomUUID();
    const key = randomUUID();

    const first = await app.send('POST', '/orders', `{"ref":"${ref}","__proto__":{"a":1}}`, key);
    const other = await app.send('POST', '/orders', `{"ref":"${ref}","__proto__":{"a":2}}`, key);
    const same = await app.send('POST', '/orders', `{"__proto__":{"a":1},"ref":"${ref}"}`, key);

    expect(first).toMatchObject({ status: 201, replayed: null, body: { ref, run: 1 } });
    expect(other.status).toBe(422);
    expect(same).toEqual({ ...first, replayed: 'true' });
    expect(await app.runs(ref)).toBe(1);
  });

  it("refuses to start without nestjs-cls' transactional plugin, saying how to register it", async () => {
    const withoutPlugin = IdempotencyFixtureApp.spawn(db.database, broker, 'without-plugin');

    const exit = await withoutPlugin.waitForExit();

    expect(exit.code).toBe(2);
    expect(withoutPlugin.lines).toContainEqual(
      expect.stringMatching(
        /^fixture: startup failed: ConfigurationError: IdempotencyModule: @Idempotent\(\) routes need nestjs-cls' transactional plugin .*new ClsPluginTransactional/,
      ),
    );
    expect(withoutPlugin.lines).not.toContainEqual(expect.stringMatching(/listening on port/));
  });
});
