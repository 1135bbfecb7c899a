import { afterAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';
import { brokerObjectsUnder, databaseExists } from './support/leftovers';

/** The compiled demo (`npm run demo`); ORDER_SERVICE_DIST names another build output than dist/. */
const DEMO = `${process.env.ORDER_SERVICE_DIST ?? 'dist'}/apps/order-service/src/demo/demo.js`;

/** The run's namespace and database, from the demo's opening lines. */
function environmentOf(demo: ChildApp): { namespace: string; database: string } {
  const namespace = /namespace (demo-[0-9a-f]+)/.exec(demo.stdout.join('\n'))?.[1];
  const database = /database\s+(order_demo_[0-9a-f]+)/.exec(demo.stdout.join('\n'))?.[1];
  if (!namespace || !database) throw new Error(`no namespace or database in:\n${demo.stdout.join('\n')}`);
  return { namespace, database };
}

describe('the demo (npm run demo)', () => {
  afterAll(async () => {
    await ChildApp.killAll();
  });

  it('settles every order, dead-letters every malformed message with its reason, holds every scenario, exits 0 and leaves nothing behind', async () => {
    // The settle timeout is an upper bound, not a target: the demo exits once settled. It shares the machine's
    // PostgreSQL (100 connections) with another spec's app, and may wait for connections.
    const demo = ChildApp.start(DEMO, { args: ['--orders', '40', '--timeout', '90'] });

    const exit = await demo.waitForExit(150_000);

    // On a failure, the demo's own report says why.
    expect({ exit, report: exit.code === 0 ? [] : demo.stdout.slice(-15) }).toEqual({
      exit: expect.objectContaining({ code: 0 }),
      report: [],
    });
    // 40 through the API, the one with a large note, and the order the poison message was meant for.
    expect(demo.stdout).toContain(
      'OK: all 42 orders were paid, shipped and sent a receipt, and the 6 bad message(s) were dead-lettered with the expected reasons; 5 scenario check(s) held.',
    );
    // The note's JSON (24000 characters and its quotes) in the store; OrderPlaced without it on the wire.
    const claimCheck = demo.stdout.find((line) => line.startsWith('  claim check'));
    expect(claimCheck).toMatch(
      /^ {2}claim check +a 24000-character note kept in rm_claim_check \(24002 B\), \d{3} B of OrderPlaced on the wire$/,
    );
    expect(demo.stdout).toContainEqual(
      expect.stringMatching(
        /^ {2}duplicates +20 copies of 10 OrderPlaced: 20 skipped by the order saga's inbox \(rm_messages_deduplicated_total\), 10 applied, 10 OrderPaid in the outbox$/,
      ),
    );
    const transient = demo.stdout.find((line) => line.startsWith('  transient failures'));
    const [, failed, retried] = /(\d+) receipt attempts failed, (\d+) retried/.exec(transient ?? '') ?? [];
    expect(Number(failed)).toBeGreaterThan(0);
    expect(retried).toBe(failed);
    expect(transient).toMatch(/; 42\/42 receipts sent, 0 in receipt\.order-shipped\.dlq$/);
    expect(demo.stdout).toContain(
      '  poison message       dead-lettered as attempts-exhausted after 8 attempts (OrderNotFoundError); order id fixed and replayed, audit edit-replay completed; handled once, order shipped, receipt sent',
    );
    // The saga's two ways out: the payment timeout, and the refund after a shipping failure.
    expect(demo.stdout).toContainEqual(
      expect.stringMatching(
        /^ {2}order saga +never paid: cancelled \(payment-timeout\), saga completed at 'cancelled' after \d+ step\(s\), 0 charge\(s\), 0 refund\(s\); undeliverable: cancelled \(shipment-failed\), saga completed at 'cancelled' after \d+ step\(s\), 1 charge\(s\), 1 refund\(s\)$/,
      ),
    );
    for (const reason of [
      'malformed-json',
      'invalid-utf8',
      'forbidden-key',
      'validation-failed',
      'unsupported-schema-version',
      'missing-header',
    ]) {
      expect(
        demo.stdout.some((line) => line.includes('order-saga.order-placed.dlq') && line.includes(reason)),
      ).toBe(true);
    }
    const { namespace, database } = environmentOf(demo);
    expect(await databaseExists(database)).toBe(false);
    expect(brokerObjectsUnder(namespace)).toEqual([]);
  }, 180_000);

  it('exits 1 within its timeout, saying what is missing, when the orders cannot settle in time', async () => {
    const demo = ChildApp.start(DEMO, { args: ['--orders', '5000', '--timeout', '2'] });

    const exit = await demo.waitForExit(30_000);

    expect(exit).toEqual({ code: 1, signal: null });
    expect(demo.stdout).toContain('  - not settled within the 2 s timeout');
    const { namespace, database } = environmentOf(demo);
    expect(await databaseExists(database)).toBe(false);
    expect(brokerObjectsUnder(namespace)).toEqual([]);
  });
});
