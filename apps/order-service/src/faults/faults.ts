import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { Pool } from 'pg';
import { loadAppConfig } from '../config/app-config';
import { DemoEnvironment } from '../demo/demo-environment';
import { HARNESS_APPLICATION_NAME } from './database.faults';
import { FakeReceiptServer } from './fake-receipt-server';
import type { Fault } from './fault';
import { faultCatalog, FULL_DURATIONS, QUICK_DURATIONS, selectFaults, withOutage } from './fault-catalog';
import { runFault, type CyclePhases, type FaultRow } from './fault-cycle';
import { FAULT_POINTS_ENV } from './fault-points';
import { faultTableProblems, formatFaultTable, formatFaultTableMarkdown } from './fault-table';
import { HarnessBroker } from './harness-broker';
import { ManagedApp } from './managed-app';
import { OrderLoad } from './order-load';
import { soakFault } from './soak.fault';
import { restoreServices } from './restore-services';

interface FaultsOptions {
  only?: string;
  quick: boolean;
  soak: boolean;
  soakOrders: number;
  rate?: number;
  settleTimeout?: number;
  outage?: number;
  json?: string;
  verbose: boolean;
  history: boolean;
}

/**
 * The app's retries for the matrix: 8 attempts 0.1 to 1 s apart, so the poison message is dead-lettered in
 * seconds, and an outage that wrongly spent attempts would dead-letter healthy messages within the cycle.
 */
const MATRIX_APP_ENV = {
  RETRY_MAX_ATTEMPTS: '8',
  RETRY_INITIAL_DELAY_MS: '100',
  RETRY_MAX_DELAY_MS: '1000',
  SHUTDOWN_TIMEOUT_MS: '15000',
};
/** The handler deadline, short so that the stuck-handler fault takes seconds. */
const HANDLER_DEADLINE_MS = 3_000;

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new InvalidArgumentError('expected a whole number above 0');
  return parsed;
}

function parseOptions(argv: string[]): FaultsOptions {
  return new Command('npm run faults --')
    .description(
      'Runs the order service under steady load, injects one fault at a time (app kills, broker and database ' +
        'outages, alarms, a stuck handler, a poison message), waits until everything settles and prints one row ' +
        'per fault. Exits 1 if any order was lost, charged twice or sent two receipts, or a healthy message was ' +
        'dead-lettered. Faults that stop or alarm the broker or PostgreSQL disturb everyone using them.',
    )
    .option('--only <faults>', 'run only these faults: names or prefixes, comma-separated')
    .option('--quick', 'one short cycle of each fault (what npm test runs)', false)
    .option(
      '--soak',
      'the soak: random faults every 20 to 40 s under load until --soak-orders are accepted',
      false,
    )
    .option('--soak-orders <count>', 'orders the soak places', positiveInteger, 100_000)
    .option(
      '--rate <orders>',
      'orders a second through POST /orders (default 50, 20 with --quick)',
      positiveInteger,
    )
    .option(
      '--settle-timeout <seconds>',
      'how long orders may take to settle after a fault (default 300, 90 with --quick, 1800 with --soak)',
      positiveInteger,
    )
    .option('--outage <seconds>', 'hold every outage this long instead (to iterate quickly)', positiveInteger)
    .option('--json <file>', 'also write the rows as JSON to this file')
    .option('--verbose', "show the app's log", false)
    .option(
      '--no-history',
      'skip the ordering history (test/ordering-history.e2e-spec.ts at full size, with a broker restart), which ' +
        'runs after the full matrix',
    )
    .parse(argv)
    .opts<FaultsOptions>();
}

/** A free TCP port on 127.0.0.1, so the app keeps one port across restarts. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv);
  const config = loadAppConfig(process.env);
  const started = Date.now();
  let durations = options.quick ? QUICK_DURATIONS : FULL_DURATIONS;
  if (options.outage) durations = withOutage(durations, options.outage * 1000);
  const catalog = faultCatalog(durations);
  let faults: Fault[] = selectFaults(catalog, options.only);
  const rate = options.rate ?? (options.quick ? 20 : 50);
  const phases: CyclePhases = {
    warmUpMs: options.quick ? 1_000 : 5_000,
    afterMs: options.quick ? 1_000 : 5_000,
    settleTimeoutMs: (options.settleTimeout ?? (options.quick ? 90 : options.soak ? 1800 : 300)) * 1000,
  };

  const interrupted = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted.signal.aborted) {
      console.log(`\n${signal} again: still restoring what the fault broke, please wait`);
      return;
    }
    console.log(`\n${signal}: restoring what the fault broke, then cleaning up`);
    interrupted.abort(new Error(`interrupted by ${signal}`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const receipts = await FakeReceiptServer.start();
  const environment = await DemoEnvironment.create(config.databaseUrl);
  const database = new Pool({
    connectionString: environment.databaseUrl,
    max: 4,
    application_name: HARNESS_APPLICATION_NAME,
  });
  database.on('error', () => undefined);
  const broker = new HarnessBroker(config.amqpUrls[0]);
  const app = new ManagedApp(
    join(__dirname, '..', 'main.js'),
    {
      ...MATRIX_APP_ENV,
      HANDLER_DEADLINE_MS: String(HANDLER_DEADLINE_MS),
      // Twice the load, so the backlog an outage leaves drains afterwards; at the load's own rate it never would.
      RECEIPT_RATE_LIMIT: String(rate * 2),
      DATABASE_URL: environment.databaseUrl,
      MESSAGING_NAMESPACE: environment.namespace,
      RECEIPT_URL: receipts.url,
      [FAULT_POINTS_ENV]: '1',
    },
    await freePort(),
    options.verbose,
  );
  const load = new OrderLoad(app.api, rate);
  if (options.soak) {
    // Faults with a stage of their own (the cluster) cannot fire in the middle of another cycle.
    faults = [
      soakFault(
        faults.filter((fault) => !fault.stage),
        options.soakOrders,
        load,
      ),
    ];
    phases.warmUpMs = 30_000;
  }
  const touchesMachine = faults.some((fault) => fault.machineWide);
  const rows: FaultRow[] = [];

  console.log(`Fault matrix: the order service under ${rate} orders/s, one fault at a time`);
  console.log(`  database   ${environment.databaseName}, namespace ${environment.namespace}`);
  console.log(`  receipts   ${receipts.url} (remembers keys across app restarts)`);
  try {
    await app.start();
    console.log(`  app        HTTP on port ${app.port}\n`);
    for (const fault of faults) {
      console.log(`- ${fault.name}: ${fault.description}`);
      const row = await runFault(
        fault,
        {
          app,
          receipts,
          environment,
          database,
          broker,
          handlerDeadlineMs: HANDLER_DEADLINE_MS,
          signal: interrupted.signal,
        },
        load,
        phases,
      );
      rows.push(row);
      console.log(`    ${formatFaultTable([row])[1].trim()}`);
      for (const note of row.notes) console.log(`    ${note}`);
      for (const problem of faultTableProblems([row])) console.log(`    PROBLEM ${problem}`);
    }
  } catch (error) {
    console.error(`\nThe fault matrix stopped: ${error instanceof Error ? error.message : String(error)}`);
    const tail = app.process?.tail ?? [];
    if (tail.length > 0)
      console.error(["The app's last log lines:", ...tail.map((line) => `    ${line}`)].join('\n'));
    return interrupted.signal.aborted ? 130 : 1;
  } finally {
    await load.stop();
    if (touchesMachine) await restoreServices().catch((error: unknown) => console.error(String(error)));
    await app.shutdown().catch(() => undefined);
    await broker
      .connection()
      .then((model) => environment.removeBrokerObjects(model))
      .catch(() => undefined);
    await database.end().catch(() => undefined);
    await environment.dropDatabase().catch(() => undefined);
    await broker.close();
    await receipts.close();
    if (options.json) await writeFile(options.json, JSON.stringify(rows, null, 2));
  }

  console.log('');
  for (const line of formatFaultTable(rows)) console.log(line);
  if (options.verbose) for (const line of formatFaultTableMarkdown(rows)) console.log(line);
  const problems = faultTableProblems(rows);
  console.log(
    problems.length === 0
      ? `\nOK: ${rows.length} fault(s), nothing lost, nothing charged or sent twice, no healthy message dead-lettered.`
      : `\nFAILED:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`,
  );
  const historyPassed =
    options.history && !options.quick && !options.soak && !options.only ? runOrderingHistory() : true;
  console.log(`Done in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  return problems.length === 0 && historyPassed ? 0 : 1;
}

/**
 * The ordering history at full size (10,000 keyed messages per ordering configuration, under retries, kills,
 * connection closes, dead-letter and replay, a change of partition count and a restart of this machine's broker,
 * which the matrix owns while it runs); its own spec, in a child process. True when it passed.
 */
function runOrderingHistory(): boolean {
  console.log('\nOrdering history: every ordering configuration under faults, checked message by message');
  const run = spawnSync(
    process.execPath,
    [
      'node_modules/jest/bin/jest.js',
      // A run cut short by a failure may leave a connection to a broker that restarted open.
      '--forceExit',
      '--testPathIgnorePatterns',
      '/node_modules/',
      '--testRegex',
      'test/ordering-history\\.e2e-spec\\.ts$',
    ],
    {
      stdio: 'inherit',
      env: {
        ...process.env,
        HISTORY_FULL: '1',
        HISTORY_BROKER: 'local',
        NODE_OPTIONS: '--experimental-vm-modules',
      },
    },
  );
  const passed = run.status === 0;
  console.log(passed ? 'Ordering history: OK, no order violation' : 'Ordering history: FAILED (see above)');
  return passed;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(
      `The fault matrix could not start: ${error instanceof Error ? error.message : String(error)}`,
    );
    process.exit(1);
  },
);
