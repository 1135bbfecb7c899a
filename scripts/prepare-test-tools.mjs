// @ts-check
/**
 * Readies the two system tools the test suite drives, before anything else of `npm test` runs: Chromium (the
 * operator console's browser spec, apps/order-service/src/demo/headless-chromium.ts) and promtool (the alert
 * rules' unit tests, test/alert-rules.e2e-spec.ts). When both are there it does nothing and takes a few
 * milliseconds. When one is missing and this runs as root with apt-get (CI, a container), it installs Debian's
 * `chromium` and `prometheus` packages, as the broker is prepared by scripts/prepare-test-broker.mjs. Otherwise it
 * fails at once with one line giving the one command to run, rather than letting two specs fail after ten minutes
 * of tests.
 *
 * `CHROMIUM_PATH` names another Chromium than the one on the PATH, as it does for the specs.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';

/** The tools, each with the Debian package that provides it and what needs it. */
export const TEST_TOOLS = [
  { command: 'chromium', package: 'chromium', neededBy: "the operator console's browser spec" },
  { command: 'promtool', package: 'prometheus', neededBy: "the alert rules' tests" },
];

/**
 * What the decision needs from the machine, injected so that a unit spec can play every machine.
 * @typedef {object} ToolsHost
 * @property {(command: string) => string | undefined} which The path of `command` on the PATH, or undefined.
 * @property {(path: string) => boolean} exists Whether the file at `path` exists and is executable.
 * @property {number | undefined} uid This process's user id (undefined where there is none, on Windows).
 * @property {string | undefined} chromiumPath `CHROMIUM_PATH`, when set.
 * @property {(command: string, args: string[], env: Record<string, string>) => number} run Runs a command,
 *   its output shown, and answers its exit code.
 * @property {(line: string) => void} say Writes one line for the user.
 */

/**
 * Installs the missing tools when it can, or says how; answers the exit code for `npm test`: 0 when every tool
 * is there (already, or once installed), 1 otherwise.
 * @param {ToolsHost} host
 * @returns {number}
 */
export function prepareTestTools(host) {
  const chromiumPath = host.chromiumPath?.trim() || undefined;
  if (chromiumPath && !host.exists(chromiumPath)) {
    host.say(
      `CHROMIUM_PATH is ${chromiumPath}, which is not an executable file: point it at Chromium, or unset it to use the chromium on the PATH`,
    );
    return 1;
  }
  const isThere = (/** @type {(typeof TEST_TOOLS)[number]} */ tool) =>
    tool.command === 'chromium' && chromiumPath ? true : host.which(tool.command) !== undefined;
  const missing = TEST_TOOLS.filter((tool) => !isThere(tool));
  if (missing.length === 0) return 0;

  const packages = missing.map((tool) => tool.package);
  const what = `${missing.map((tool) => `${tool.command} (${tool.neededBy})`).join(' and ')} ${missing.length > 1 ? 'are' : 'is'} missing`;
  const command = `sudo apt-get install ${packages.join(' ')}`;
  if (host.uid !== 0 || host.which('apt-get') === undefined) {
    const how =
      host.which('apt-get') === undefined
        ? `install ${missing.map((tool) => tool.command).join(' and ')} (on Debian or Ubuntu: ${command})`
        : `run once: ${command}`;
    host.say(`${what}: ${how}, then npm test again`);
    return 1;
  }

  host.say(`${what}: installing ${packages.join(' ')} with apt-get (this runs as root)`);
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  // NOTE: a fresh image has no package lists, and apt-get install fails on a package it has never heard of.
  if (host.run('apt-get', ['update', '-qq'], env) !== 0) {
    host.say(`apt-get update failed (above); once the package sources answer, run: ${command}`);
    return 1;
  }
  // NOTE: DPkg::Lock::Timeout waits for another apt (unattended-upgrades on a fresh machine) instead of failing.
  const installed = host.run(
    'apt-get',
    ['install', '-y', '--no-install-recommends', '-o', 'DPkg::Lock::Timeout=120', ...packages],
    env,
  );
  const stillMissing = missing.filter((tool) => !isThere(tool)).map((tool) => tool.command);
  if (installed !== 0 || stillMissing.length > 0) {
    host.say(
      `apt-get install ${packages.join(' ')} ${installed !== 0 ? `failed with exit code ${installed}` : `left ${stillMissing.join(' and ')} off the PATH`} (above); fix that, then run: ${command}`,
    );
    return 1;
  }
  return 0;
}

/**
 * The path of `command` in one of the PATH's directories, or undefined; what `command -v` answers, without
 * starting a shell.
 * @param {string} command
 */
function which(command) {
  for (const directory of (process.env.PATH ?? '').split(delimiter)) {
    if (directory === '') continue;
    const path = join(directory, command);
    if (isExecutable(path)) return path;
  }
  return undefined;
}

/** @param {string} path */
function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** @type {ToolsHost} */
const machine = {
  which,
  exists: isExecutable,
  uid: process.getuid?.(),
  chromiumPath: process.env.CHROMIUM_PATH,
  run: (command, args, env) =>
    spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env } }).status ?? 1,
  say: (line) => process.stderr.write(`prepare-test-tools: ${line}\n`),
};

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = prepareTestTools(machine);
}
