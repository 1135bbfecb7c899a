import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { ChildApp } from './support/child-app';
import { FIXTURE_ORDERS_TABLE, IdempotencyFixtureApp } from './support/idempotency-app';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { TestBroker } from './support/test-broker';

/**
 * Idempotency keys are scoped per caller, with the module's default identifyCaller: the principal an
 * authentication guard put on the request (the fixture's guard sets `request.user.sub` from `x-test-user`), else
 * the Authorization header. Another caller's key is a request of its own: it never gets the first caller's
 * stored response, never a 422 telling it the key exists, and a key claimed in advance blocks nobody else.
 */
describe('@Idempotent() keys of two callers', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: IdempotencyFixtureApp;
  const as = (user: string) => ({ 'x-test-user': user });

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

  it("runs caller B's request with caller A's key and body afresh, without A's response", async () => {
    const ref = randomUUID();
    const key = randomUUID();

    const a = await app.send('POST', '/orders', { ref }, key, as('alice'));
    const b = await app.send('POST', '/orders', { ref }, key, as('bob'));
    const bAgain = await app.send('POST', '/orders', { ref }, key, as('bob'));

    expect(a).toMatchObject({ status: 201, replayed: null, body: { ref, run: 1 } });
    expect(b).toMatchObject({ status: 201, replayed: null, body: { ref, run: 2 } });
    expect(b.body.id).not.toBe(a.body.id);
    expect(bAgain).toEqual({ ...b, replayed: 'true' });
    expect(await app.runs(ref)).toBe(2);
  });

  it("runs caller B's request with caller A's key and another body, with no 422 telling B the key exists", async () => {
    const key = randomUUID();
    await app.send('POST', '/orders', { ref: randomUUID() }, key, as('alice'));
    const ref = randomUUID();

    const b = await app.send('POST', '/orders', { ref }, key, as('bob'));

    expect(b).toMatchObject({ status: 201, replayed: null, body: { ref, run: 1 } });
  });

  it('lets the real client use a key another caller claimed in advance', async () => {
    const key = `order-${randomUUID()}`;
    await app.send('POST', '/orders', { ref: 'squatted' }, key, as('mallory'));
    const ref = randomUUID();

    const real = await app.send('POST', '/orders', { ref }, key, as('alice'));

    expect(real).toMatchObject({ status: 201, replayed: null, body: { ref, run: 1 } });
  });

  it('tells callers apart by their Authorization header without a principal, storing only its hash', async () => {
    const ref = randomUUID();
    const key = randomUUID();
    const token = (name: string) => ({ authorization: `Bearer token-of-${name}-${key}` });

    const a = await app.send('POST', '/orders', { ref }, key, token('alice'));
    const b = await app.send('POST', '/orders', { ref }, key, token('bob'));
    const aAgain = await app.send('POST', '/orders', { ref }, key, token('alice'));

    expect([a.replayed, b.replayed, aAgain.replayed]).toEqual([null, null, 'true']);
    expect(aAgain.body).toEqual(a.body);
    expect(b.body.id).not.toBe(a.body.id);
    const rows = await db.dataSource.query<Array<{ caller: string }>>(
      `SELECT caller FROM rm_idempotency_keys WHERE idempotency_key = $1`,
      [key],
    );
    expect(rows).toHaveLength(2);
    for (const { caller } of rows) expect(caller).toMatch(/^[0-9a-f]{64}$/);
  });

  it('shares the key among callers without an identity, and warns once that it does', async () => {
    const ref = randomUUID();
    const key = randomUUID();

    const first = await app.send('POST', '/orders', { ref }, key);
    const second = await app.send('POST', '/orders', { ref }, key);

    expect(second).toEqual({ ...first, replayed: 'true' });
    const [{ caller }] = await db.dataSource.query<Array<{ caller: string }>>(
      `SELECT caller FROM rm_idempotency_keys WHERE idempotency_key = $1`,
      [key],
    );
    expect(caller).toBe('anonymous');
    expect(app.process.lines.filter((line) => line.includes('came without a caller identity'))).toHaveLength(
      1,
    );
  });
});
