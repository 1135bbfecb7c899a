// Builds each publishable package twice, as ESM (dist/esm) and as CommonJS (dist/cjs), with tsc: see
// docs/packaging.md for why two builds and why tsc. Prints how long each step took.
import { execFileSync } from 'node:child_process';
import console from 'node:console';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';

const root = resolve(import.meta.dirname, '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);

/** The packages, in dependency order: the admin package compiles against the core's built declarations. */
export const PACKAGES = [
  { dir: 'libs/reliable-messaging', aliasConfig: 'tsconfig.esm.json' },
  // NOTE: the admin package's ESM build maps `nestjs-reliable-messaging` to the core's declarations; tsc-alias
  // would rewrite that mapping into relative paths, so it runs with a config without `paths`.
  { dir: 'libs/reliable-messaging-admin', aliasConfig: 'tsconfig.alias.json' },
];

function timed(label, run) {
  const started = performance.now();
  run();
  console.log(`  ${label.padEnd(34)} ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

function run(command, args, cwd) {
  execFileSync(command, args, { cwd, stdio: 'inherit' });
}

export function buildPackages() {
  const built = [];
  for (const { dir, aliasConfig } of PACKAGES) {
    const cwd = join(root, dir);
    console.log(`build-packages: ${dir}`);
    rmSync(join(cwd, 'dist'), { recursive: true, force: true });
    timed('tsc (ESM)', () => run(bin('tsc'), ['-p', 'tsconfig.esm.json'], cwd));
    timed('tsc-alias (full .js import paths)', () => run(bin('tsc-alias'), ['-p', aliasConfig], cwd));
    timed('tsc (CommonJS)', () => run(bin('tsc'), ['-p', 'tsconfig.cjs.json'], cwd));
    // Each build says what its .js files are, whatever the package's own `type`.
    for (const [build, type] of [
      ['esm', 'module'],
      ['cjs', 'commonjs'],
    ]) {
      mkdirSync(join(cwd, 'dist', build), { recursive: true });
      writeFileSync(join(cwd, 'dist', build, 'package.json'), `${JSON.stringify({ type })}\n`);
    }
    built.push(dir);
  }
  return built;
}

if (import.meta.url === `file://${process.argv[1]}`) buildPackages();
