// @ts-check
/**
 * Runs the end-to-end specs (`npm test`'s last step) in two groups: first every spec that can share the broker
 * and PostgreSQL with another, two at a time, then the specs of `test/support/e2e-groups.cjs` one at a time
 * (its OWN_PROCESS ones each in a Jest process of its own, last). Both groups always run; the exit code is
 * non-zero when either failed. Ends with one `Tests: …` line for the
 * two groups together, which CI reads.
 *
 * `--group=shared` or `--group=alone` runs one group only; other arguments go to Jest (e.g. `--verbose`).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';

const require = createRequire(import.meta.url);
/** @type {{ ALONE: string[], OWN_PROCESS: string[] }} */
const { ALONE, OWN_PROCESS } = require('../test/support/e2e-groups.cjs');

const missing = [...ALONE, ...OWN_PROCESS].filter((path) => !existsSync(path));
if (missing.length > 0) {
  process.stderr.write(`test/support/e2e-groups.cjs names specs that do not exist: ${missing.join(', ')}\n`);
  process.exit(2);
}

const groupArg = process.argv.find((arg) => arg.startsWith('--group='));
const group = groupArg?.slice('--group='.length);
if (group !== undefined && group !== 'shared' && group !== 'alone') {
  process.stderr.write(`--group takes shared or alone, not ${group}\n`);
  process.exit(2);
}
const extra = process.argv.slice(2).filter((arg) => arg !== groupArg);
const countsDir = mkdtempSync(join(tmpdir(), 'rm-e2e-counts-'));
const countsFile = join(countsDir, 'counts.jsonl');
const escape = (path) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** @param {string} name @param {string[]} args */
function jest(name, args) {
  process.stdout.write(`\n=== end-to-end specs: ${name} ===\n`);
  const started = Date.now();
  const result = spawnSync('npx', ['jest', ...args, ...extra], {
    stdio: 'inherit',
    env: {
      ...process.env,
      NODE_OPTIONS: [process.env.NODE_OPTIONS, '--experimental-vm-modules'].filter(Boolean).join(' '),
      RM_TEST_COUNTS_FILE: countsFile,
    },
  });
  process.stdout.write(`=== ${name}: ${((Date.now() - started) / 1000).toFixed(0)} s ===\n`);
  return result.status ?? 1;
}

const shared =
  group === 'alone'
    ? 0
    : jest('sharing the services, two at a time', [
        '--testRegex',
        '\\.e2e-spec\\.ts$',
        '--maxWorkers=2',
        '--testPathIgnorePatterns',
        '/node_modules/',
        '/test/cluster-failover\\.e2e-spec\\.ts$',
        ...[...ALONE, ...OWN_PROCESS].map((path) => `/${escape(path)}$`),
      ]);
const alone =
  group === 'shared'
    ? 0
    : ([
        jest('one at a time', ['--maxWorkers=1', '--runTestsByPath', ...ALONE]),
        ...OWN_PROCESS.map((path) => jest(`${path}, in a process of its own`, ['--runTestsByPath', path])),
      ].find((status) => status !== 0) ?? 0);

const counts = { passed: 0, failed: 0, skipped: 0 };
if (existsSync(countsFile)) {
  for (const line of readFileSync(countsFile, 'utf8').split('\n').filter(Boolean)) {
    const run = JSON.parse(line);
    counts.passed += run.passed;
    counts.failed += run.failed;
    counts.skipped += run.skipped;
  }
}
rmSync(countsDir, { recursive: true, force: true });
const failed = shared !== 0 || alone !== 0;
process.on('exit', () =>
  process.stderr.write(
    `Tests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`,
  ),
);
process.exitCode = failed ? 1 : 0;
