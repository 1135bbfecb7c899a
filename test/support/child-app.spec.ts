import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChildApp } from './child-app';

/**
 * A stand-in for a compiled app: says it is ready, echoes GREETING and NODE_OPTIONS, drains on SIGTERM. The
 * SIGTERM handler is installed before 'ready' is printed: until a listener exists the signal's default action
 * (terminate) applies, and the spec sends it as soon as it reads that line.
 */
const FAKE_APP = `
process.on('SIGTERM', () => {
  console.log('draining');
  setTimeout(() => process.exit(3), 20);
});
console.log('ready pid=' + process.pid);
console.error('greeting=' + process.env.GREETING + ' node_options=' + (process.env.NODE_OPTIONS ?? 'unset'));
setInterval(() => undefined, 1000);
`;

describe('ChildApp', () => {
  let dir: string;
  let script: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'child-app-'));
    script = join(dir, 'fake-app.js');
    writeFileSync(script, FAKE_APP);
  });

  afterAll(async () => {
    await ChildApp.killAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('collects stdout and stderr lines, passes env, and reports the exit code after a SIGTERM', async () => {
    const app = ChildApp.start(script, { env: { GREETING: 'hello' } });

    await expect(app.waitForLine(/^ready pid=\d+$/)).resolves.toBe(`ready pid=${app.pid}`);
    await expect(app.waitForLine(/^greeting=/)).resolves.toBe('greeting=hello node_options=unset');
    app.kill('SIGTERM');

    await expect(app.waitForExit(5_000)).resolves.toEqual({ code: 3, signal: null });
    expect(app.stdout).toEqual([`ready pid=${app.pid}`, 'draining']);
    expect(app.stderr).toEqual(['greeting=hello node_options=unset']);
    expect(app.hasExited).toBe(true);
  });

  it('reports the signal when the child is killed without a chance to drain', async () => {
    const app = ChildApp.start(script);
    await app.waitForLine(/^ready/);

    await expect(app.stop('SIGKILL')).resolves.toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('fails fast, quoting the last lines, when the child exits before printing the awaited line', async () => {
    const app = ChildApp.start(script);
    await app.waitForLine(/^ready/);
    app.kill('SIGTERM');

    await expect(app.waitForLine(/never printed/, 10_000)).rejects.toThrow(
      /exited \(exit code 3\) before printing a line matching \/never printed\/; last lines:\n.*draining/s,
    );
  });

  it('refuses a script that has not been built', () => {
    expect(() => ChildApp.start('dist/does-not-exist.js')).toThrow('run `npm run build` first');
  });
});
