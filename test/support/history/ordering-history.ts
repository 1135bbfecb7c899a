import { ChildApp } from '../child-app';
import { createMessagingDatabase, type MessagingDatabase } from '../messaging-database';
import { TestBroker } from '../test-broker';
import { waitFor } from '../wait-for';
import {
  checkHistory,
  countByKind,
  describeViolation,
  type HandlingRow,
  type ReplayOutcome,
  type Violation,
} from './history-checker';

/** The compiled history app; `RM_TEST_DIST` points at another build output than `dist`. */
const APP = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/history-app.js`;

/** The tables the history app writes: every committed handling, the published rounds, the poison steps. */
export const HISTORY_TABLES_SQL = [
  'CREATE TABLE history_handled (position bigserial PRIMARY KEY, config text NOT NULL, key text NOT NULL, ' +
    'seq int NOT NULL, attempt int NOT NULL, replica text NOT NULL, queue text NOT NULL, handled_at bigint NOT NULL)',
  'CREATE INDEX history_handled_config ON history_handled (config)',
  'CREATE TABLE history_rounds (config text NOT NULL, round int NOT NULL, PRIMARY KEY (config, round))',
  'CREATE TABLE history_poison (config text NOT NULL, key text NOT NULL, seq int NOT NULL, released boolean NOT NULL DEFAULT false)',
];

/** The broker a history runs against, and what it can do to it. */
export interface HistoryBroker {
  /** The AMQP URL the run's apps connect to; several, comma-separated, for a cluster. */
  url: string;
  /** Closes the connections whose name starts with `namePrefix` (only the run's own); resolves with how many. */
  closeConnections(namePrefix: string): Promise<number>;
  /** Restarts the broker (one node of a cluster); absent where the run must not. */
  restart?(): Promise<void>;
}

/** What a run does to the path while messages flow. */
export type HistoryFault =
  /** Every 37th step fails its first attempt (always on: it is in the app). */
  | 'retries'
  /** A replica's connections are closed mid-run: what it held is redelivered. */
  | 'redelivery'
  /** A replica is SIGKILLed mid-run and a new one started. */
  | 'consumer-kill'
  /** The publishing process, which relays, is SIGKILLed while rounds remain, and restarted. */
  | 'relay-kill'
  /** Two steps fail every attempt, are dead-lettered, later replayed. */
  | 'dead-letter-replay'
  /** The broker restarts mid-run. */
  | 'broker-restart'
  /** Key-ordered configurations with `repartitionTo`: publish half, drain, restart the replicas with more partitions. */
  | 'repartition';

/** One consumer configuration a history runs through. */
export interface HistoryConfiguration {
  /** A short name, part of queue names. */
  name: string;
  /** The history app's HISTORY_ORDERING: `none`, `queue` or `key:<partitions>`. */
  ordering: 'none' | 'queue' | `key:${number}`;
  /** With the lanes `even` and `odd` (keys alternate between them). */
  lanes?: boolean;
  /** The partition count the replicas restart with after the first half (the `repartition` fault). */
  repartitionTo?: number;
  /** A publisher that breaks order on purpose: the checker must find violations. */
  shuffle?: boolean;
  /** Violations are expected (the unordered baseline, the shuffling publisher): reported, not a failure. */
  violationsExpected?: boolean;
}

/** What a run found for one configuration. */
export interface ConfigurationResult {
  configuration: HistoryConfiguration;
  /** Messages published. */
  messages: number;
  /** Committed handlings recorded. */
  handlings: number;
  violations: Violation[];
  replays: ReplayOutcome[];
  /** The faults that happened, in order. */
  faults: string[];
  durationMs: number;
}

/** How to run an ordering history. */
export interface OrderingHistoryOptions {
  broker: HistoryBroker;
  /** Keys per configuration. */
  keys: number;
  /** Messages per key. */
  perKey: number;
  faults: readonly HistoryFault[];
  /** Default: {@link DEFAULT_CONFIGURATIONS}. */
  configurations?: readonly HistoryConfiguration[];
  /** Consumer replicas per configuration. Default: 2. */
  replicas?: number;
  /** A pause between the publisher's rounds, so faults land while messages flow. Default: 0. */
  roundMs?: number;
  /** Default: none. */
  log?: (line: string) => void;
}

/** The configurations of the guarantee table, the unordered baseline first. */
export const DEFAULT_CONFIGURATIONS: readonly HistoryConfiguration[] = [
  { name: 'none', ordering: 'none', violationsExpected: true },
  { name: 'queue', ordering: 'queue' },
  { name: 'key', ordering: 'key:4', repartitionTo: 8 },
  { name: 'key-lanes', ordering: 'key:4', lanes: true },
];

/** The result of {@link runOrderingHistory}. */
export interface OrderingHistoryResult {
  results: ConfigurationResult[];
  /** One line per configuration: messages, handlings, violations by kind, replays, faults, duration. */
  table: string;
}

/**
 * Runs keys × perKey messages through the outbox, the relay, the broker and replicas of each configuration's
 * consumer while injecting `faults`, then checks each configuration's recorded history (checkHistory). Uses a
 * database of its own and queues under a prefix of its own, and removes both.
 */
export async function runOrderingHistory(options: OrderingHistoryOptions): Promise<OrderingHistoryResult> {
  const db = await createMessagingDatabase(HISTORY_TABLES_SQL, { admin: true });
  const broker = await TestBroker.connect(options.broker.url.split(',')[0]);
  const results: ConfigurationResult[] = [];
  try {
    // Side by side: each configuration has its own queues, exchange and rows, and the load is the point. The
    // broker is one, so it restarts once, when every configuration is ready for it.
    const configurations = options.configurations ?? DEFAULT_CONFIGURATIONS;
    const { broker: target } = options;
    const restart =
      options.faults.includes('broker-restart') && target.restart
        ? meeting(configurations.length, () => target.restart!())
        : undefined;
    results.push(
      ...(await Promise.all(
        configurations.map((configuration) =>
          runConfiguration(configuration, options, db, broker, restart?.join()),
        ),
      )),
    );
  } finally {
    await ChildApp.killAll();
    await broker.deleteByPrefix().catch(() => undefined);
    await broker.close().catch(() => undefined);
    await db.drop();
  }
  return { results, table: summaryTable(results) };
}

/** One party's part in a {@link meeting}: arrive when ready for it, or leave (failed) without it. */
interface MeetingSeat {
  arrive(): Promise<void>;
  leave(): void;
}

/**
 * Runs `work` once, when each of `parties` seats has arrived (or left); every arrival resolves when it is done. The
 * configurations' broker restart: one broker, restarted once, while no configuration is in the middle of another
 * fault (closing connections needs a running broker).
 */
function meeting(parties: number, work: () => Promise<void>): { join(): MeetingSeat } {
  let present = 0;
  let start!: () => void;
  const done = new Promise<void>((resolve) => (start = resolve)).then(work);
  done.catch(() => undefined);
  const count = (): void => {
    if (++present === parties) start();
  };
  return {
    join() {
      let counted = false;
      const once = (): void => {
        if (!counted) count();
        counted = true;
      };
      return {
        arrive: () => {
          once();
          return done;
        },
        leave: once,
      };
    },
  };
}

async function runConfiguration(
  configuration: HistoryConfiguration,
  options: OrderingHistoryOptions,
  db: MessagingDatabase,
  broker: TestBroker,
  restart?: MeetingSeat,
): Promise<ConfigurationResult> {
  try {
    return await runConfigurationOnce(configuration, options, db, broker, restart);
  } finally {
    // A configuration that failed before the restart does not hold the others' up.
    restart?.leave();
  }
}

async function runConfigurationOnce(
  configuration: HistoryConfiguration,
  options: OrderingHistoryOptions,
  db: MessagingDatabase,
  broker: TestBroker,
  restart: MeetingSeat | undefined,
): Promise<ConfigurationResult> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  const { name } = configuration;
  const faults = new Set(options.faults);
  const perKey = options.perKey;
  const keys = Array.from({ length: options.keys }, (_, i) => `${name}-k${String(i).padStart(4, '0')}`);
  const total = keys.length * perKey;
  const queue = broker.name(name);
  const exchange = broker.name(`${name}-events`);
  const happened: string[] = [];
  const poison = faults.has('dead-letter-replay')
    ? [
        { key: keys[1 % keys.length], seq: Math.ceil(perKey / 5) },
        { key: keys[2 % keys.length], seq: Math.ceil((perKey * 3) / 4) },
      ]
    : [];
  for (const step of poison) {
    await db.dataSource.query('INSERT INTO history_poison (config, key, seq) VALUES ($1, $2, $3)', [
      name,
      step.key,
      step.seq,
    ]);
  }
  const repartition = faults.has('repartition') && configuration.repartitionTo !== undefined;
  const half = Math.ceil(perKey / 2);

  const common = {
    HISTORY_CONFIG: name,
    HISTORY_QUEUE: queue,
    HISTORY_EXCHANGE: exchange,
    HISTORY_LANES: configuration.lanes ? '1' : undefined,
    HISTORY_POISON: poison.map((step) => `${step.key}:${step.seq}`).join(','),
    DATABASE_URL: db.database.url,
    AMQP_URL: options.broker.url,
  };
  let nextReplica = 0;
  const connectionName = (replica: number): string =>
    `${broker.prefix}.${name}-r${String(replica).padStart(2, '0')}.`;
  const startReplica = (ordering: string): { app: ChildApp; index: number } => {
    const index = nextReplica++;
    const app = ChildApp.start(APP, {
      env: {
        ...common,
        HISTORY_ROLE: 'consumer',
        HISTORY_ORDERING: ordering,
        HISTORY_REPLICA: `r${index}`,
        HISTORY_CONNECTION_NAME: connectionName(index),
        HISTORY_WORK_MS: '2',
      },
    });
    return { app, index };
  };
  const startPublisher = (until: number): ChildApp =>
    ChildApp.start(APP, {
      env: {
        ...common,
        HISTORY_ROLE: 'publisher',
        HISTORY_REPLICA: 'publisher',
        HISTORY_CONNECTION_NAME: `${broker.prefix}.${name}-publisher.`,
        HISTORY_KEYS: keys.join(','),
        HISTORY_PER_KEY: String(perKey),
        HISTORY_UNTIL_ROUND: String(until),
        HISTORY_SHUFFLE: configuration.shuffle ? '1' : undefined,
        HISTORY_ROUND_MS: String(options.roundMs ?? 0),
      },
    });
  const handled = async (): Promise<number> => {
    const [row] = await db.dataSource.query<Array<{ n: number }>>(
      'SELECT count(DISTINCT (key, seq))::int AS n FROM history_handled WHERE config = $1',
      [name],
    );
    return row.n;
  };
  const expectedBy = (round: number): number =>
    keys.length * round - poison.filter((step) => step.seq <= round).length;
  const awaitHandled = async (count: number, what: string): Promise<void> => {
    let seen = 0;
    await waitFor(
      () => `${name}: ${what} (${count} handled; ${seen} so far)`,
      async () => (seen = await handled()) >= count,
      { timeoutMs: Math.max(120_000, total * 30), intervalMs: 100 },
    );
  };
  const ready = async (apps: ChildApp[]): Promise<void> => {
    await Promise.all(apps.map((app) => app.waitForLine(/^history \w+ ready/, 60_000)));
  };

  let ordering: string = configuration.ordering;
  let replicas = Array.from({ length: options.replicas ?? 2 }, () => startReplica(ordering));
  await ready(replicas.map((r) => r.app));
  let publisher = startPublisher(repartition ? half : perKey);
  await ready([publisher]);

  if (repartition) {
    await publisher.waitForLine(/^published$/, 120_000);
    await awaitHandled(expectedBy(half), 'the first half drained');
    await Promise.all([publisher, ...replicas.map((r) => r.app)].map((app) => app.stop('SIGTERM')));
    ordering = `key:${configuration.repartitionTo}`;
    replicas = replicas.map(() => startReplica(ordering));
    await ready(replicas.map((r) => r.app));
    happened.push(`partitions ${configuration.ordering.slice(4)} → ${configuration.repartitionTo}`);
    publisher = startPublisher(perKey);
    await ready([publisher]);
  }

  const from = repartition ? expectedBy(half) : 0;
  const at = (share: number): number => Math.floor(from + (total - from) * share);
  if (faults.has('redelivery')) {
    await awaitHandled(at(0.2), 'before closing a connection');
    const closed = await options.broker.closeConnections(connectionName(replicas[0].index));
    happened.push(`closed r${replicas[0].index}'s ${closed} connection(s)`);
  }
  if (faults.has('relay-kill')) {
    const round = Math.ceil(perKey * (repartition ? 0.75 : 0.5));
    await publisher.waitForLine(new RegExp(`^round ${round} committed$`), 120_000);
    publisher.kill('SIGKILL');
    await publisher.waitForExit();
    happened.push(`relay killed after round ${round}`);
    publisher = startPublisher(perKey);
    await ready([publisher]);
  }
  if (faults.has('consumer-kill')) {
    await awaitHandled(at(0.4), 'before killing a replica');
    const victim = replicas[replicas.length - 1];
    victim.app.kill('SIGKILL');
    await victim.app.waitForExit();
    const replacement = startReplica(ordering);
    replicas = [...replicas.slice(0, -1), replacement];
    await ready([replacement.app]);
    happened.push(`r${victim.index} killed, r${replacement.index} started`);
  }
  if (restart) {
    await awaitHandled(at(0.6), 'before restarting the broker');
    await restart.arrive();
    happened.push('broker restarted');
  }
  await publisher.waitForLine(/^published$/, 180_000);
  await awaitHandled(total - poison.length, 'every step but the poison ones');

  if (poison.length > 0) {
    const replay = ChildApp.start(APP, {
      env: {
        ...common,
        HISTORY_ROLE: 'replay',
        HISTORY_ORDERING: ordering,
        HISTORY_REPLICA: 'replay',
        HISTORY_CONNECTION_NAME: `${broker.prefix}.${name}-replay.`,
        HISTORY_DEAD_LETTERS: String(poison.length),
      },
    });
    const line = await replay.waitForLine(/^replayed /, 120_000);
    await replay.waitForExit();
    happened.push(
      `${
        line
          .replace(/^replayed (\S*).*/, '$1')
          .split(',')
          .filter(Boolean).length
      } replayed`,
    );
    await awaitHandled(total, 'the replayed steps');
  }
  // Everything is handled: nothing is left to drain.
  await Promise.all([publisher, ...replicas.map((r) => r.app)].map((app) => app.stop('SIGKILL')));

  const rows = await db.dataSource.query<HandlingRow[]>(
    'SELECT key, seq, attempt, replica, position::float8 AS position, handled_at::float8 AS "handledAt" ' +
      'FROM history_handled WHERE config = $1 ORDER BY position',
    [name],
  );
  const ids = new Set(poison.map((step) => `${step.key}:${step.seq}`));
  const report = checkHistory(rows, { keys, perKey, deadLettered: ids, replayed: ids });
  const result: ConfigurationResult = {
    configuration,
    messages: total,
    handlings: report.handlings,
    violations: report.violations,
    replays: report.replays,
    faults: happened,
    durationMs: Date.now() - started,
  };
  log(summaryLine(result));
  for (const violation of report.violations.slice(0, configuration.violationsExpected ? 3 : 20)) {
    log(`  ${describeViolation(violation)}`);
  }
  return result;
}

function summaryLine(result: ConfigurationResult): string {
  const kinds = Object.entries(countByKind(result.violations))
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ');
  const replays = result.replays.map((r) => `${r.key}:${r.seq} ${r.handledAfter ? 'after' : 'NOT after'}`);
  return [
    result.configuration.name.padEnd(10),
    `${result.messages} messages`,
    `${result.handlings} handlings`,
    `${result.violations.length} violations${kinds ? ` (${kinds})` : ''}${result.configuration.violationsExpected ? ' [expected]' : ''}`,
    `replays: ${replays.join(', ') || 'none'}`,
    `faults: ${result.faults.join('; ') || 'none'}`,
    `${(result.durationMs / 1000).toFixed(1)} s`,
  ].join(' | ');
}

function summaryTable(results: readonly ConfigurationResult[]): string {
  return results.map(summaryLine).join('\n');
}
