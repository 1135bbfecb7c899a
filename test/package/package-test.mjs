// `npm run test:package`: the proof that the packages work from outside the repository. Packs them, then builds
// small apps in temporary directories (os.tmpdir()), installs the tarballs and their peers from the registry,
// compiles each under strict TypeScript and runs it against the real broker (and PostgreSQL):
//   1. an ESM Nest 12 app with no database package: publishes a message and consumes it; its ESM Jest spec
//      tests the handler with the testing module, in memory;
//   2. a CommonJS Nest 11 app with TypeORM, pg and Terminus 11: outbox (publish in a transaction, a rollback) and
//      inbox (a duplicate skipped) against a database of its own, and the readiness check of /health; its
//      CommonJS Jest spec tests the handler in memory;
//   3. the admin package's CLI, run through npx from the installed package.
// Each step prints its time; a failing step stops the run with its command and output.
import { spawnSync } from 'node:child_process';
import console from 'node:console';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import pg from 'pg';
import { packPackages } from '../../scripts/pack-packages.mjs';

const root = resolve(import.meta.dirname, '../..');
const fixtures = import.meta.dirname;
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
// Under the end-to-end prefix, so that a sweep of the broker removes what a crashed run left.
const prefix = `rm-e2e-pkg-${randomBytes(4).toString('hex')}`;

/**
 * The optional peers an app without a dataSource must be able to do without. Not `@opentelemetry/api`, though
 * the module loads it only on demand: prom-client 15 (a dependency) depends on it, so npm always installs it.
 */
const OPTIONAL_PEERS = [
  'typeorm',
  'pg',
  '@nestjs/typeorm',
  '@nestjs/terminus',
  '@nestjs/microservices',
  '@aws-sdk/client-s3',
  '@nestjs-cls/transactional',
];

/** The test tools at the versions this repository uses, so that installs come from the npm cache. */
const tool = (name) =>
  `${name}@${JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'))).version}`;
const NPM_INSTALL = ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'];

const timings = [];
const workDirs = [];

class StepFailed extends Error {}

/** Runs one step of the test; a non-zero exit fails the run with the step's command and output. */
function step(name, command, args, { cwd, env = {} } = {}) {
  const started = performance.now();
  const result = spawnSync(command, args, {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const seconds = (performance.now() - started) / 1000;
  timings.push([name, seconds]);
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
  if (result.status !== 0) {
    throw new StepFailed(
      `package test: step "${name}" failed (exit ${result.status ?? result.signal})\n` +
        `  $ ${command} ${args.join(' ')}\n  in ${cwd}\n\n${output.split('\n').slice(-80).join('\n')}`,
    );
  }
  console.log(`  ok ${name.padEnd(58)} ${seconds.toFixed(1)} s`);
  return output;
}

/** A new directory outside the repository with the fixture app's files. */
function appDir(fixture) {
  const dir = mkdtempSync(join(tmpdir(), `rm-package-${fixture}-`));
  workDirs.push(dir);
  cpSync(join(fixtures, fixture), dir, { recursive: true });
  return dir;
}

/** Fails when npm installed an optional peer into an app that did not ask for it. */
function assertAbsent(dir, names) {
  const present = names.filter((name) => existsSync(join(dir, 'node_modules', name)));
  if (present.length > 0) {
    throw new StepFailed(
      `package test: the app was to have none of ${names.join(', ')}, but has ${present.join(', ')}`,
    );
  }
  console.log(`  ok none of the optional peers is installed (${names.length} checked)`);
}

/**
 * Loads entry points of the installed core with `import` and with `require`, each in a fresh Node process, and
 * prints how long each took: first the required peers together (Nest, amqplib, class-validator...), so that
 * what the package itself costs shows apart.
 */
function loadEntries(dir, entries) {
  const peers = ['reflect-metadata', '@nestjs/common', '@nestjs/core', 'amqplib', 'class-validator', 'rxjs'];
  for (const [how, load] of [
    ['import', (entry) => `await import('${entry}')`],
    ['require', (entry) => `require('${entry}')`],
  ]) {
    const timed = (label, statements) =>
      `{ const t = performance.now(); ${statements}; times.push('${label} ' + (performance.now() - t).toFixed(0) + ' ms'); }`;
    const script = [
      'const times = [];',
      timed('required peers', peers.map(load).join('; ')),
      ...entries.map((entry) => timed(entry, load(entry))),
      "console.log(times.join(', '));",
    ].join('\n');
    const output = step(
      `${how} ${entries.length} entry points without the optional peers`,
      process.execPath,
      how === 'import' ? ['--input-type=module', '-e', script] : ['-e', script],
      { cwd: dir },
    );
    console.log(`     cold ${how}: ${output}`);
  }
}

async function withDatabase(work) {
  const name = `rm_e2e_pkg_${randomBytes(6).toString('hex')}`;
  const admin = async (sql) => {
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE "${name}"`);
  const url = new globalThis.URL(DATABASE_URL);
  url.pathname = `/${name}`;
  try {
    return await work(url.toString());
  } finally {
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  }
}

function esmApp(core) {
  console.log('ESM Nest 12 app, no database package:');
  const dir = appDir('esm-app');
  step(
    'npm install the core tarball and its required peers',
    'npm',
    [
      ...NPM_INSTALL,
      core,
      '@nestjs/common@^12',
      '@nestjs/core@^12',
      'reflect-metadata',
      'rxjs',
      'class-validator',
      'class-transformer',
      'amqplib',
    ],
    { cwd: dir },
  );
  step(
    'npm install the dev tools (typescript, jest, @nestjs/testing)',
    'npm',
    [
      ...NPM_INSTALL,
      '--save-dev',
      tool('typescript'),
      tool('@types/node'),
      tool('jest'),
      tool('ts-jest'),
      tool('@jest/globals'),
      '@nestjs/testing@^12',
    ],
    { cwd: dir },
  );
  assertAbsent(dir, OPTIONAL_PEERS);
  loadEntries(dir, [
    'nestjs-reliable-messaging',
    'nestjs-reliable-messaging/testing',
    'nestjs-reliable-messaging/operations',
    'nestjs-reliable-messaging/safe-json',
  ]);
  step('tsc under strict', 'npx', ['tsc', '-p', 'tsconfig.json'], { cwd: dir });
  const run = step('run: publish a message and consume it', process.execPath, ['dist/src/main.js'], {
    cwd: dir,
    env: { AMQP_URL, EXCHANGE: `${prefix}.esm.events`, GREETINGS_QUEUE: `${prefix}.esm.greetings` },
  });
  console.log(`     ${run.split('\n').at(-1)}`);
  step('ESM Jest spec of the handler (testing module, in memory)', 'npx', ['jest', '--ci'], {
    cwd: dir,
    env: { NODE_OPTIONS: '--experimental-vm-modules' },
  });
  return dir;
}

async function cjsApp(core) {
  console.log('CommonJS Nest 11 app, TypeORM and PostgreSQL:');
  const dir = appDir('cjs-app');
  step(
    'npm install the core tarball, its peers, TypeORM, pg and Terminus',
    'npm',
    [
      ...NPM_INSTALL,
      core,
      '@nestjs/common@^11',
      '@nestjs/core@^11',
      'reflect-metadata',
      'rxjs',
      'class-validator',
      'class-transformer',
      'amqplib',
      'typeorm@^0.3',
      'pg',
      '@nestjs/typeorm@^11',
      '@nestjs/terminus@^11',
    ],
    { cwd: dir },
  );
  step(
    'npm install the dev tools (typescript, jest, @nestjs/testing)',
    'npm',
    [
      ...NPM_INSTALL,
      '--save-dev',
      tool('typescript'),
      tool('@types/node'),
      tool('jest'),
      tool('ts-jest'),
      '@types/jest',
      '@types/pg',
      '@nestjs/testing@^11',
    ],
    { cwd: dir },
  );
  step('tsc under strict', 'npx', ['tsc', '-p', 'tsconfig.json'], { cwd: dir });
  await withDatabase(async (url) => {
    const run = step('run: outbox and inbox against PostgreSQL', process.execPath, ['dist/src/main.js'], {
      cwd: dir,
      env: {
        AMQP_URL,
        DATABASE_URL: url,
        EXCHANGE: `${prefix}.cjs.events`,
        SHIPPING_QUEUE: `${prefix}.cjs.shipping`,
      },
    });
    console.log(`     ${run.split('\n').at(-1)}`);
  });
  step('CommonJS Jest spec of the handler (testing module, in memory)', 'npx', ['jest', '--ci'], {
    cwd: dir,
  });
  return dir;
}

/** Installs the admin tarball beside the core in the ESM app and runs its CLI through npx. */
function adminCli(admin, dir) {
  console.log('Admin CLI from the installed admin package:');
  if (!admin)
    throw new StepFailed('package test: npm run pack wrote no nestjs-reliable-messaging-admin tarball');
  step('npm install the admin tarball', 'npm', [...NPM_INSTALL, admin], { cwd: dir });
  const help = step('npx dlq --help', 'npx', ['--no-install', 'dlq', '--help'], { cwd: dir });
  if (!/dlq/.test(help)) throw new StepFailed(`package test: \`dlq --help\` did not describe dlq:\n${help}`);
  step('npx dlq queues (against the broker)', 'npx', ['--no-install', 'dlq', 'queues'], {
    cwd: dir,
    env: { AMQP_URL, RM_EXCHANGE: `${prefix}.esm.events` },
  });
}

async function main() {
  const started = performance.now();
  console.log('Packing:');
  const packStarted = performance.now();
  const tarballs = packPackages();
  timings.push(['pack', (performance.now() - packStarted) / 1000]);
  const core = tarballs['nestjs-reliable-messaging'];
  if (!core) throw new StepFailed('package test: npm run pack wrote no nestjs-reliable-messaging tarball');
  const esmDir = esmApp(core);
  await cjsApp(core);
  adminCli(tarballs['nestjs-reliable-messaging-admin'], esmDir);
  for (const dir of workDirs) rmSync(dir, { recursive: true, force: true });
  console.log(`package test: passed in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

main().catch((error) => {
  console.error(error instanceof StepFailed ? error.message : error);
  console.error(`\nThe apps are left for a look: ${workDirs.join(', ')}`);
  process.exit(1);
});
