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

/** The machine's RabbitMQ node, through `rabbitmqctl` and `rabbitmq-diagnostics` (run as root). */
export const rabbitmq = {
  stopApp: () => runCommand('rabbitmqctl', ['-q', 'stop_app']),
  startApp: async () => {
    await runCommand('rabbitmqctl', ['-q', 'start_app']);
    await runCommand('rabbitmqctl', ['-q', 'await_startup']);
  },
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
