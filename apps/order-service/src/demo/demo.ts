// First: the namespace must be in the environment before the app's modules load (demo-namespace.ts).
import './demo-namespace';
import { join } from 'node:path';
import * as amqp from 'amqplib';
import { Command, InvalidArgumentError } from 'commander';
import { Pool } from 'pg';
import { loadAppConfig } from '../config/app-config';
import { collectOutcome } from './collect-outcome';
import { DemoEnvironment } from './demo-environment';
import { DemoLedger } from './demo-ledger';
import { DuplicateDeliveriesStep } from './duplicate-deliveries.step';
import { buildReport } from './demo-report';
import type { DemoContext, DemoStep } from './demo-step';
import { LargeNoteStep } from './large-note.step';
import { MalformedMessagesStep } from './malformed-messages.step';
import { OrderApiClient } from './order-api.client';
import { describeExit, OrderServiceProcess } from './order-service-process';
import { PlaceOrdersStep } from './place-orders.step';
import { PoisonMessageStep } from './poison-message.step';
import { SagaOutcomesStep } from './saga-outcomes.step';
import { ProgressDisplay } from './progress-display';
import { TransientFailuresStep } from './transient-failures.step';
import { watchUntilSettled } from './watch-until-settled';

interface DemoOptions {
  orders: number;
  concurrency: number;
  timeout: number;
  receiptFailureRate: number;
  keep: boolean;
  verbose: boolean;
}

/**
 * Short retries for the demo (the app's RETRY_* variables): up to 8 attempts, 0.1 to 1 s apart, so a poison
 * message is dead-lettered within seconds while a receipt call failing 20% of the time still gets through
 * (all 8 attempts fail for about 1 order in 400 000).
 */
const DEMO_RETRY_ENV = { RETRY_MAX_ATTEMPTS: '8', RETRY_INITIAL_DELAY_MS: '100', RETRY_MAX_DELAY_MS: '1000' };

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) {
    throw new InvalidArgumentError('expected a whole number above 0');
  }
  return parsed;
}

function share(value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || parsed < 0 || parsed > 0.5) {
    throw new InvalidArgumentError('expected a number from 0 to 0.5');
  }
  return parsed;
}

function parseOptions(argv: string[]): DemoOptions {
  return new Command('npm run demo --')
    .description(
      'Runs the order service on a fresh database and its own exchange and queues, places orders and sends ' +
        'malformed messages, duplicates and a poison message (fixed and replayed) while the receipt service fails ' +
        'now and then, then checks that every order was paid, shipped and sent a receipt, that every bad message ' +
        'was dead-lettered with its reason, and that each scenario held. Exits 0 when all is as expected.',
    )
    .option('--orders <count>', 'orders to place', positiveInteger, 300)
    .option('--concurrency <count>', 'orders in flight at once', positiveInteger, 20)
    .option('--timeout <seconds>', 'how long the orders may take to settle', positiveInteger, 45)
    .option(
      '--receipt-failure-rate <share>',
      'share of receipt calls failing transiently, 0 to 0.5',
      share,
      0.2,
    )
    .option('--keep', 'keep the database, queues and dead letters for inspection', false)
    .option('--verbose', "show the app's log", false)
    .parse(argv)
    .opts<DemoOptions>();
}

/** The demo's scenario, in the order its steps are announced; they run at the same time. */
function demoSteps(options: DemoOptions): DemoStep[] {
  return [
    new PlaceOrdersStep(options.orders, options.concurrency),
    new LargeNoteStep(),
    new MalformedMessagesStep(),
    new DuplicateDeliveriesStep(Math.min(10, options.orders)),
    new TransientFailuresStep(options.receiptFailureRate),
    new PoisonMessageStep(),
    new SagaOutcomesStep(),
  ];
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv);
  // The same variables and defaults as the app; the demo's own connection uses the first broker URL.
  const config = loadAppConfig(process.env);
  const started = Date.now();
  const interrupted = new AbortController();
  process.once('SIGINT', () => interrupted.abort(new Error('interrupted')));

  const environment = await DemoEnvironment.create(config.databaseUrl);
  console.log('Reliable messaging demo: the order service under load, with bad input on the side');
  console.log(`  database   ${environment.databaseName} (fresh for this run)`);
  console.log(
    `  broker     exchange ${environment.names.exchange} and its queues (namespace ${environment.namespace})`,
  );

  let app: OrderServiceProcess | undefined;
  let connection: amqp.ChannelModel | undefined;
  const database = new Pool({ connectionString: environment.databaseUrl, max: 4 });
  database.on('error', () => undefined);
  const steps = demoSteps(options);
  const appEnv: Record<string, string> = {
    ...DEMO_RETRY_ENV,
    ...(Object.assign({}, ...steps.map((step) => step.appEnv ?? {})) as Record<string, string>),
    DATABASE_URL: environment.databaseUrl,
    MESSAGING_NAMESPACE: environment.namespace,
  };
  try {
    const brokerUrl = config.amqpUrls[0];
    connection = await amqp.connect(brokerUrl).catch((error: unknown) => {
      throw new Error(
        `could not connect to the broker at ${new URL(brokerUrl).host} (${error instanceof Error ? error.message : String(error)}); ` +
          'is RabbitMQ running there? (AMQP_URL)',
        { cause: error },
      );
    });
    connection.on('error', () => undefined);
    app = OrderServiceProcess.start(
      // Resolved next to this file, so the demo runs from any working directory.
      join(__dirname, '..', 'main.js'),
      { ...appEnv, PORT: '0' },
      options.verbose,
    );
    const port = await app.waitUntilListening(30_000);
    console.log(`  app        started in ${seconds(Date.now() - started)} s, HTTP on port ${port}`);

    const channel = await connection.createConfirmChannel();
    channel.on('error', () => undefined);
    const ledger = new DemoLedger();
    const startedAt = Date.now();
    const deadline = startedAt + options.timeout * 1000;
    const context: DemoContext = {
      api: new OrderApiClient(`http://127.0.0.1:${port}`),
      channel,
      names: environment.names,
      model: connection,
      database,
      appEnv,
      ledger,
      // Steps stop sending at the deadline or on Ctrl-C, so a run that cannot finish still ends on time.
      signal: AbortSignal.any([interrupted.signal, AbortSignal.timeout(options.timeout * 1000)]),
    };
    console.log('\nSending, all at once:');
    for (const step of steps) console.log(`  - ${step.title}`);
    console.log('');

    let stepsDone = false;
    const running = Promise.all(steps.map((step) => step.run(context))).finally(() => (stepsDone = true));
    // Awaited after the watch; until then a failing step must not surface as an unhandled rejection.
    running.catch(() => undefined);
    const settled = await watchUntilSettled({
      context,
      model: connection,
      deadLetterQueues: environment.deadLetterQueues,
      total: options.orders,
      stepsDone: () => stepsDone,
      startedAt,
      deadline,
      progress: new ProgressDisplay(options.orders),
    });
    // A step cut short by the deadline rejects with the abort; the report then says what did not settle.
    await running.catch((error: unknown) => {
      if (!context.signal.aborted) throw error;
    });
    if (interrupted.signal.aborted) throw interrupted.signal.reason;

    const outcome = await collectOutcome(context, connection, environment.deadLetterQueues, startedAt);
    const report = buildReport({
      ...outcome,
      settled,
      timeoutSeconds: options.timeout,
      namespace: environment.namespace,
    });
    console.log('');
    for (const line of report.lines) console.log(line);
    if (!report.ok) printAppLog(app);
    return report.ok ? 0 : 1;
  } catch (error) {
    console.error(`\nThe demo stopped: ${error instanceof Error ? error.message : String(error)}`);
    if (app) printAppLog(app);
    return interrupted.signal.aborted ? 130 : 1;
  } finally {
    const exit = await app?.stop();
    // Nest re-raises the signal once its shutdown hooks are done, so a graceful stop ends by SIGTERM.
    if (exit && exit.code !== 0 && exit.signal !== 'SIGTERM') {
      console.log(`The app ended badly: ${describeExit(exit)}.`);
    }
    await database.end().catch(() => undefined);
    if (options.keep) {
      console.log(
        `\nKept for inspection: database ${environment.databaseName}, exchange ${environment.names.exchange} and ` +
          `the queues under ${environment.namespace}. Run the app on them with ` +
          `MESSAGING_NAMESPACE=${environment.namespace} DATABASE_URL=${redactPassword(environment.databaseUrl)} npm start`,
      );
    } else {
      if (connection) await environment.removeBrokerObjects(connection).catch(() => undefined);
      await environment.dropDatabase().catch(() => undefined);
    }
    await connection?.close().catch(() => undefined);
    console.log(`Done in ${seconds(Date.now() - started)} s.`);
  }
}

function printAppLog(app: OrderServiceProcess): void {
  if (app.tail.length === 0) return;
  console.log(["\nThe app's last log lines:", ...app.tail.map((line) => `    ${line}`)].join('\n'));
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(1);
}

function redactPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`The demo could not start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
