import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RabbitCluster } from '../apps/order-service/src/faults/rabbit-cluster';
import { rabbitmq } from '../apps/order-service/src/faults/system-services';
import { closeConnectionsNamed } from './support/messaging-app';
import { countByKind } from './support/history/history-checker';
import {
  runOrderingHistory,
  type HistoryBroker,
  type HistoryFault,
  type OrderingHistoryResult,
} from './support/history/ordering-history';
import { DEFAULT_AMQP_URL } from './support/test-broker';

/**
 * HISTORY_FULL=1 (`npm run history`) runs the full form: 100 keys × 100 messages per configuration, with a broker
 * restart mid-run: of the machine's broker with HISTORY_BROKER=local (`npm run faults` runs it so, when nothing
 * else uses the broker), else of one node of a private 3-node cluster (scripts/rabbitmq-cluster.sh). The quick form
 * runs on the shared broker, which it must not restart: 20 keys × 50 messages, every other fault.
 */
const FULL = process.env.HISTORY_FULL === '1';
const LOCAL_BROKER = process.env.HISTORY_BROKER === 'local';
const KEYS = FULL ? 100 : 20;
const PER_KEY = FULL ? 100 : 50;
const QUICK_FAULTS: HistoryFault[] = [
  'retries',
  'redelivery',
  'consumer-kill',
  'relay-kill',
  'dead-letter-replay',
  'repartition',
];

describe(`ordering history: ${KEYS} keys × ${PER_KEY} messages per configuration, under faults`, () => {
  let cluster: RabbitCluster | undefined;
  let broker: HistoryBroker;
  let run: OrderingHistoryResult;

  beforeAll(async () => {
    if (FULL && LOCAL_BROKER) {
      broker = {
        url: process.env.AMQP_URL ?? DEFAULT_AMQP_URL,
        closeConnections: closeConnectionsNamed,
        restart: async () => {
          await rabbitmq.stopApp();
          await rabbitmq.startApp();
        },
      };
    } else if (FULL) {
      cluster = await RabbitCluster.start();
      const [first] = cluster.nodes;
      await cluster.ctl(first, 'eval', 'ok.');
      broker = {
        url: cluster.nodes.map((node) => node.url).join(','),
        closeConnections: (prefix) =>
          closeConnectionsNamed(prefix, (...args) => cluster!.ctl(first, ...args)),
        restart: async () => {
          await cluster!.ctl(first, 'stop_app');
          await cluster!.ctl(first, 'start_app');
        },
      };
    } else {
      broker = { url: process.env.AMQP_URL ?? DEFAULT_AMQP_URL, closeConnections: closeConnectionsNamed };
    }
  }, 300_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('keeps every key in order, complete and without duplicates, for queue, key, key with lanes and a change of N; the unordered baseline shows violations', async () => {
    run = await runOrderingHistory({
      broker,
      keys: KEYS,
      perKey: PER_KEY,
      faults: FULL ? [...QUICK_FAULTS, 'broker-restart'] : QUICK_FAULTS,
      log: (line) => process.stdout.write(`${line}\n`),
    });
    console.log(`ordering history\n${run.table}`);
    const byName = Object.fromEntries(run.results.map((result) => [result.configuration.name, result]));
    for (const name of ['queue', 'key', 'key-lanes']) {
      expect({ name, violations: countByKind(byName[name].violations) }).toEqual({ name, violations: {} });
      expect(byName[name].replays.every((replay) => replay.handledAfter)).toBe(true);
      expect(byName[name].replays).toHaveLength(2);
    }
    // The baseline loses and doubles nothing; only its order is not kept.
    expect(byName.none.violations.length).toBeGreaterThan(0);
    expect(byName.none.violations.filter((v) => v.kind !== 'out-of-order')).toEqual([]);
  }, 900_000);

  it('fails the check when the publisher breaks the order of a key-ordered consumer', async () => {
    const broken = await runOrderingHistory({
      broker,
      keys: 10,
      perKey: 20,
      faults: ['retries'],
      configurations: [{ name: 'shuffled', ordering: 'key:4', shuffle: true, violationsExpected: true }],
    });
    console.log(`ordering history, shuffled publisher\n${broken.table}`);
    expect(countByKind(broken.results[0].violations)).toEqual({ 'out-of-order': expect.any(Number) });
    expect(broken.results[0].violations.length).toBeGreaterThan(0);
  }, 300_000);
});
