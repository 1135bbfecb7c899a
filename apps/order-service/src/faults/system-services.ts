import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';

/** The memory watermark and disk limit the faults restore: RabbitMQ's defaults, which `.ci/run` also sets. */
export const DEFAULT_MEMORY_WATERMARK = '0.4';
export const DEFAULT_DISK_FREE_LIMIT = '50MB';

const COMMAND_TIMEOUT_MS = 60_000;

/** Runs a command line tool and resolves with its stdout; rejects with its stderr when it fails. */
export function runCommand(command: string, args: string[], timeoutMs = COMMAND_TIMEOUT_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`${command} ${args.join(' ')} failed: ${(stderr || error.message).trim()}`));
      } else resolve(stdout);
    });
  });
}

/**
 * The node's file-handle budget (`file_handle_cache`'s limit) when a fault stopped its application: `start_app`
 * resets it to what the descriptor limit gives (927 under Debian's 1024), and a node with a few hundred quorum
 * queues then never finishes booting (see scripts/prepare-test-broker.mjs).
 */
let fileHandleBudget: number | undefined;

/** How often the budget is put back while the application boots. */
const BUDGET_REAPPLY_MS = 250;

/** The node's file-handle budget, or undefined when its application is not running. */
async function readFileHandleBudget(): Promise<number | undefined> {
  const out = await runCommand('rabbitmqctl', ['-q', 'eval', 'file_handle_cache:get_limit().']).catch(
    () => '',
  );
  const budget = Number(out.trim());
  return Number.isInteger(budget) && budget > 0 ? budget : undefined;
}

/** Raises the node's file-handle budget to `budget` when it is lower; fails quietly while the node boots. */
function raiseFileHandleBudget(budget: number): Promise<unknown> {
  return runCommand('rabbitmqctl', [
    '-q',
    'eval',
    `case file_handle_cache:get_limit() < ${budget} of true -> file_handle_cache:set_limit(${budget}); false -> ok end.`,
  ]).catch(() => undefined);
}

/** The machine's RabbitMQ node, through `rabbitmqctl` and `rabbitmq-diagnostics` (run as root). */
export const rabbitmq = {
  /** Stops the node's application, remembering its file-handle budget for {@link rabbitmq.startApp}. */
  stopApp: async () => {
    fileHandleBudget = (await readFileHandleBudget()) ?? fileHandleBudget;
    await runCommand('rabbitmqctl', ['-q', 'stop_app']);
  },
  /**
   * Starts the node's application and waits for it to boot, putting the file-handle budget it had before
   * {@link rabbitmq.stopApp} back while it boots: the queues it recovers need it.
   */
  startApp: async () => {
    const budget = fileHandleBudget;
    let booting = true;
    const keepBudget = (async () => {
      while (budget !== undefined && booting) {
        await raiseFileHandleBudget(budget);
        await new Promise((resolve) => setTimeout(resolve, BUDGET_REAPPLY_MS));
      }
    })();
    try {
      await runCommand('rabbitmqctl', ['-q', 'start_app']);
      await runCommand('rabbitmqctl', ['-q', 'await_startup']);
    } finally {
      booting = false;
      await keepBudget;
    }
    if (budget !== undefined) await raiseFileHandleBudget(budget);
  },
  /** The node's file-handle budget, or undefined when its application is not running. */
  fileHandleBudget: readFileHandleBudget,
  setMemoryWatermark: (fraction: string) =>
    runCommand('rabbitmqctl', ['-q', 'set_vm_memory_high_watermark', fraction]),
  setDiskFreeLimit: (limit: string) => runCommand('rabbitmqctl', ['-q', 'set_disk_free_limit', limit]),
  /** Free bytes on the node's data disk, as the node measures them. */
  async diskFreeBytes(): Promise<number> {
    const status = JSON.parse(await runCommand('rabbitmqctl', ['-q', 'status', '--formatter', 'json'])) as {
      disk_free?: number;
    };
    if (typeof status.disk_free !== 'number') throw new Error('rabbitmqctl status did not report disk_free');
    return status.disk_free;
  },
  /** The node's resource alarms in force, e.g. `['memory']` or `['disk']`. */
  async alarms(): Promise<string[]> {
    const status = JSON.parse(await runCommand('rabbitmqctl', ['-q', 'status', '--formatter', 'json'])) as {
      alarms?: Array<{ resource?: unknown }>;
    };
    return (status.alarms ?? []).map((alarm) => String(alarm.resource));
  },
  /**
   * Closes every client connection whose `connection_name` starts with `prefix`, as `close_all_connections`
   * would but leaving other users of the broker alone. Resolves with how many it closed.
   */
  async closeConnectionsNamed(prefix: string, explanation: string): Promise<number> {
    const connections = JSON.parse(
      await runCommand('rabbitmqctl', [
        '-q',
        'list_connections',
        'pid',
        'client_properties',
        '--formatter',
        'json',
      ]),
    ) as Array<{ pid: string; client_properties: Array<[string, string, unknown]> }>;
    const ours = connections.filter((connection) => {
      const name = connection.client_properties.find(([key]) => key === 'connection_name')?.[2];
      return typeof name === 'string' && name.startsWith(prefix);
    });
    for (const connection of ours) {
      await runCommand('rabbitmqctl', ['-q', 'close_connection', connection.pid, explanation]).catch(
        () => undefined,
      );
    }
    return ours.length;
  },
};

/** The machine's PostgreSQL cluster (the newest version under /etc/postgresql, cluster `main`). */
export const postgres = {
  get version(): string {
    const versions = readdirSync('/etc/postgresql').sort((a, b) => Number(a) - Number(b));
    if (versions.length === 0) throw new Error('no PostgreSQL cluster under /etc/postgresql');
    return versions[versions.length - 1];
  },
  control(action: 'start' | 'stop' | 'restart') {
    return runCommand('pg_ctlcluster', ['--skip-systemctl-redirect', postgres.version, 'main', action]);
  },
  async isRunning(): Promise<boolean> {
    const output = await runCommand('pg_lsclusters', ['--no-header']).catch(() => '');
    return output
      .split('\n')
      .some((line) => line.split(/\s+/)[0] === postgres.version && /\bonline\b/.test(line));
  },
};
