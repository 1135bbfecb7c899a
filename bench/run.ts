import 'reflect-metadata';
import { consumeSuite } from './consume.bench';
import {
  describeMachine,
  formatLatencyTable,
  formatTable,
  type Comparison,
  type LatencyComparison,
  type Suite,
  type SuiteResults,
} from './harness';
import { publishSuite } from './publish.bench';
import { outboxSuite } from './outbox.bench';
import { inboxSuite } from './inbox.bench';
import { lanesSuite } from './lanes.bench';
import { peersSuite } from './peers.bench';
import { envelopeSuite } from './envelope.bench';
import { memorySuite } from './memory.bench';
import { ordersSuite } from './orders.bench';
import { transactionalSuite } from './transactional.bench';
import { scaleSuite } from './scale.bench';
import { schedulingSuite } from './scheduling.bench';
import { sagasSuite } from './sagas.bench';

/** Every suite, run one after the other; add a new suite here. `BENCH_SUITES=consume,publish` picks some. */
const SUITES: Suite[] = [
  consumeSuite,
  publishSuite,
  outboxSuite,
  inboxSuite,
  lanesSuite,
  envelopeSuite,
  peersSuite,
  ordersSuite,
  transactionalSuite,
  scaleSuite,
  schedulingSuite,
  sagasSuite,
  memorySuite,
];

async function main(): Promise<void> {
  const selected = process.env.BENCH_SUITES?.split(',').map((name) => name.trim());
  const suites = SUITES.filter((suite) => !selected || selected.includes(suite.name));
  console.log(describeMachine());
  const comparisons: Comparison[] = [];
  const latencies: LatencyComparison[] = [];
  const tables: string[] = [];
  for (const suite of suites) {
    const started = Date.now();
    const output = await suite.run();
    const results: SuiteResults = Array.isArray(output) ? { comparisons: output, latencies: [] } : output;
    comparisons.push(...results.comparisons);
    latencies.push(...results.latencies);
    tables.push(...(results.tables ?? []));
    console.log(`${suite.name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    if (results.comparisons.length > 0) console.log(formatTable(results.comparisons));
    if (results.latencies.length > 0) console.log(`\n${formatLatencyTable(results.latencies)}`);
    for (const table of results.tables ?? []) console.log(`\n${table}`);
  }
  console.log(`\nAll suites`);
  if (comparisons.length > 0) console.log(`\n${formatTable(comparisons)}`);
  if (latencies.length > 0) console.log(`\n${formatLatencyTable(latencies)}`);
  for (const table of tables) console.log(`\n${table}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
