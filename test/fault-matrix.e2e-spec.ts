import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FaultRow } from '../apps/order-service/src/faults/fault-cycle';
import { rabbitmq } from '../apps/order-service/src/faults/system-services';
import { ChildApp } from './support/child-app';

/** The compiled harness (`npm run faults`); ORDER_SERVICE_DIST names another build output than dist/. */
const FAULTS = `${process.env.ORDER_SERVICE_DIST ?? 'dist'}/apps/order-service/src/faults/faults.js`;

/** Every fault of the matrix, one short cycle each (`--quick`), in the order they run. */
const FAULTS_IN_ORDER = [
  'app-kill',
  'relay-kill',
  'sigterm',
  'close-connections',
  'broker-stop-3s',
  'memory-alarm',
  'disk-alarm',
  'pg-restart',
  'pg-stop-3s',
  'pg-terminate',
  'pg-connection-limit',
  'handler-deadline',
  'poison',
  'saga-step-kill',
];

/**
 * The fault matrix's quick form against the real broker and PostgreSQL: the order service under load, each fault
 * once (a short outage, a kill, an alarm), every accepted order settled, none charged or sent a receipt twice, and
 * the poison message the only dead letter. Stops and alarms the machine's broker and database for a few seconds
 * each, so it cannot share them with another suite (Jest runs suites one at a time).
 */
describe('the fault matrix, quick form (npm run faults -- --quick)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fault-matrix-'));

  afterAll(async () => {
    await ChildApp.killAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('loses nothing, doubles nothing and dead-letters only the poison message under every fault', async () => {
    const json = join(dir, 'rows.json');
    const budgetBefore = await rabbitmq.fileHandleBudget();
    const harness = ChildApp.start(FAULTS, { args: ['--quick', '--json', json] });

    const exit = await harness.waitForExit(600_000);

    // The harness's own verdict first, so that a failure shows which fault went wrong in a few lines.
    const problems = harness.lines.filter((line) =>
      /PROBLEM|The fault matrix stopped|could not start|^\s+- /.test(line),
    );
    expect(problems).toEqual([]);
    expect({ exit, output: harness.lines.slice(-40) }).toMatchObject({ exit: { code: 0 } });
    const rows = JSON.parse(readFileSync(json, 'utf8')) as FaultRow[];
    expect(rows.map((row) => row.fault)).toEqual(FAULTS_IN_ORDER);
    for (const row of rows) {
      expect({ fault: row.fault, accepted: row.accepted > 0, error: row.error }).toEqual({
        fault: row.fault,
        accepted: true,
        error: undefined,
      });
      expect(row).toMatchObject({
        lost: 0,
        sagasStuck: 0,
        paidTwice: 0,
        receiptsTwice: 0,
        orderViolations: 0,
        wrongDeadLetters: [],
      });
      expect(row.settled).toBe(row.accepted);
      expect(row.deadLettered).toBe(row.fault === 'poison' ? 1 : 0);
    }
    // The broker's restart left its file-handle budget as it was: the specs after this one need it.
    expect(await rabbitmq.fileHandleBudget()).toBe(budgetBefore);
  }, 660_000);
});
