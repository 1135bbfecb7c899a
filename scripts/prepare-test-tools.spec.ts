import { describe, expect, it } from '@jest/globals';
import { prepareTestTools, type ToolsHost } from './prepare-test-tools.mjs';

/** A machine as the script sees it: what is on the PATH, who runs it, and what apt-get does when run. */
interface Machine {
  /** Commands on the PATH. */
  onPath: string[];
  uid?: number;
  chromiumPath?: string;
  /** Executable files outside the PATH (for CHROMIUM_PATH). */
  files?: string[];
  /** Exit code of `apt-get update`; 0 by default. */
  updateExit?: number;
  /** Exit code of `apt-get install`; 0 by default, and a successful install puts its packages' commands on the PATH. */
  installExit?: number;
  /** Commands a successful install leaves off the PATH nonetheless. */
  installLeavesOut?: string[];
}

const COMMAND_OF_PACKAGE: Record<string, string> = { chromium: 'chromium', prometheus: 'promtool' };

/** Runs the script's decision on `machine`; answers its exit code, the commands it ran and the lines it said. */
function prepareOn(machine: Machine) {
  const onPath = new Set(machine.onPath);
  const ran: Array<{ command: string; args: string[]; env: Record<string, string> }> = [];
  const said: string[] = [];
  const host: ToolsHost = {
    which: (command) => (onPath.has(command) ? `/usr/bin/${command}` : undefined),
    exists: (path) => (machine.files ?? []).includes(path),
    uid: 'uid' in machine ? machine.uid : 1000,
    chromiumPath: machine.chromiumPath,
    run: (command, args, env) => {
      ran.push({ command, args, env });
      if (args[0] === 'update') return machine.updateExit ?? 0;
      const exit = machine.installExit ?? 0;
      if (exit === 0) {
        for (const name of args.filter((arg) => arg in COMMAND_OF_PACKAGE)) {
          if (!(machine.installLeavesOut ?? []).includes(COMMAND_OF_PACKAGE[name]))
            onPath.add(COMMAND_OF_PACKAGE[name]);
        }
      }
      return exit;
    },
    say: (line) => said.push(line),
  };
  return { exit: prepareTestTools(host), ran, said };
}

const APT = ['apt-get'];
const UPDATE = { command: 'apt-get', args: ['update', '-qq'], env: { DEBIAN_FRONTEND: 'noninteractive' } };
const install = (...packages: string[]) => ({
  command: 'apt-get',
  args: ['install', '-y', '--no-install-recommends', '-o', 'DPkg::Lock::Timeout=120', ...packages],
  env: { DEBIAN_FRONTEND: 'noninteractive' },
});

describe('prepare-test-tools: Chromium and promtool before npm test runs anything', () => {
  it.each<[string, Machine]>([
    ['as a user', { onPath: ['chromium', 'promtool', ...APT] }],
    ['as root with apt-get', { onPath: ['chromium', 'promtool', ...APT], uid: 0 }],
    [
      'with CHROMIUM_PATH naming a Chromium off the PATH',
      { onPath: ['promtool'], chromiumPath: '/opt/chrome/chrome', files: ['/opt/chrome/chrome'] },
    ],
  ])('does nothing and says nothing when both are there, %s', (_case, machine) => {
    expect(prepareOn(machine)).toEqual({ exit: 0, ran: [], said: [] });
  });

  it.each<[string, string[], string[]]>([
    ['both missing', [], ['chromium', 'prometheus']],
    ['chromium missing', ['promtool'], ['chromium']],
    ['promtool missing', ['chromium'], ['prometheus']],
  ])(
    'as root with apt-get, installs what is missing (%s): one apt-get update, then one install',
    (_case, present, packages) => {
      const { exit, ran, said } = prepareOn({ onPath: [...present, ...APT], uid: 0 });

      expect(exit).toBe(0);
      expect(ran).toEqual([UPDATE, install(...packages)]);
      expect(said).toEqual([expect.stringContaining(`installing ${packages.join(' ')} with apt-get`)]);
    },
  );

  it.each<[string, Machine, string]>([
    [
      'a user with apt-get, both missing',
      { onPath: APT },
      "chromium (the operator console's browser spec) and promtool (the alert rules' tests) are missing: run once: sudo apt-get install chromium prometheus, then npm test again",
    ],
    [
      'a user with apt-get, promtool missing',
      { onPath: ['chromium', ...APT] },
      "promtool (the alert rules' tests) is missing: run once: sudo apt-get install prometheus, then npm test again",
    ],
    [
      'root without apt-get',
      { onPath: [], uid: 0 },
      "chromium (the operator console's browser spec) and promtool (the alert rules' tests) are missing: install chromium and promtool (on Debian or Ubuntu: sudo apt-get install chromium prometheus), then npm test again",
    ],
    [
      'a machine without a user id (Windows)',
      { onPath: ['promtool', ...APT], uid: undefined },
      "chromium (the operator console's browser spec) is missing: run once: sudo apt-get install chromium, then npm test again",
    ],
  ])(
    'fails at once, installing nothing, with one line giving the command to run: %s',
    (_case, machine, line) => {
      const { exit, ran, said } = prepareOn(machine);

      expect(exit).toBe(1);
      expect(ran).toEqual([]);
      expect(said).toEqual([line]);
    },
  );

  it('fails, naming the variable, when CHROMIUM_PATH names no executable file, and installs nothing', () => {
    const { exit, ran, said } = prepareOn({
      onPath: ['chromium', 'promtool', ...APT],
      uid: 0,
      chromiumPath: '/opt/none',
    });

    expect(exit).toBe(1);
    expect(ran).toEqual([]);
    expect(said).toEqual([
      expect.stringContaining('CHROMIUM_PATH is /opt/none, which is not an executable file'),
    ]);
  });

  it.each<[string, Machine, string]>([
    [
      'apt-get update fails',
      { onPath: APT, uid: 0, updateExit: 100 },
      'apt-get update failed (above); once the package sources answer, run: sudo apt-get install chromium prometheus',
    ],
    [
      'apt-get install fails',
      { onPath: APT, uid: 0, installExit: 100 },
      'apt-get install chromium prometheus failed with exit code 100 (above); fix that, then run: sudo apt-get install chromium prometheus',
    ],
    [
      'the install leaves promtool off the PATH',
      { onPath: APT, uid: 0, installLeavesOut: ['promtool'] },
      'apt-get install chromium prometheus left promtool off the PATH (above); fix that, then run: sudo apt-get install chromium prometheus',
    ],
  ])('as root, fails with the command to run when %s', (_case, machine, line) => {
    const { exit, said } = prepareOn(machine);

    expect(exit).toBe(1);
    expect(said.at(-1)).toBe(line);
  });

  it('does not install after a failed apt-get update', () => {
    expect(prepareOn({ onPath: APT, uid: 0, updateExit: 100 }).ran).toEqual([UPDATE]);
  });
});
