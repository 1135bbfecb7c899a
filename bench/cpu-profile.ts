import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

/**
 * Where the suites write CPU profiles of their measured runs: `BENCH_PROFILE_DIR`, else nowhere (no profiler
 * runs). Each profile is named after its case, side and round; `bench/flame-graph.ts` draws them.
 */
export const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;

/** Microseconds between samples: `BENCH_PROFILE_INTERVAL_US`, else 200 (V8's default is 1,000). */
const INTERVAL_US = Number(process.env.BENCH_PROFILE_INTERVAL_US ?? 200);

/**
 * Runs `work`, and when PROFILE_DIR is set, profiles this process while it runs into `<PROFILE_DIR>/<name>.cpuprofile`.
 * A profiler slows what it samples, so runs profiled are not runs to read figures from.
 */
export async function whileProfiled<T>(name: string, work: () => Promise<T>): Promise<T> {
  if (!PROFILE_DIR) return work();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: INTERVAL_US });
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    mkdirSync(PROFILE_DIR, { recursive: true });
    writeFileSync(join(PROFILE_DIR, `${name}.cpuprofile`), JSON.stringify(profile));
  }
}

/**
 * Node's options that profile a child process over its whole life into `<PROFILE_DIR>/<name>.cpuprofile` (written
 * when it exits, so it must exit rather than be killed), or none when PROFILE_DIR is not set.
 */
export function childProfileArgs(name: string): string[] {
  if (!PROFILE_DIR) return [];
  return [
    '--cpu-prof',
    `--cpu-prof-dir=${PROFILE_DIR}`,
    `--cpu-prof-name=${name}.cpuprofile`,
    `--cpu-prof-interval=${INTERVAL_US}`,
  ];
}
