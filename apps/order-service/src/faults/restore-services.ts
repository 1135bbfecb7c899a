import {
  DEFAULT_DISK_FREE_LIMIT,
  DEFAULT_MEMORY_WATERMARK,
  postgres,
  rabbitmq,
  runCommand,
} from './system-services';

/**
 * The safety net after faults that touch the machine: whatever happened, the broker runs with its default
 * watermark and disk limit and PostgreSQL runs. Each fault restores what it broke itself; this covers a restore
 * that failed.
 */
export async function restoreServices(): Promise<void> {
  const running = await runCommand('rabbitmqctl', ['-q', 'status'])
    .then((status) => /rabbit/.test(status))
    .catch(() => false);
  const listening = await runCommand('rabbitmq-diagnostics', ['-q', 'check_port_connectivity'])
    .then(() => true)
    .catch(() => false);
  if (running && !listening) await rabbitmq.startApp();
  await rabbitmq.setMemoryWatermark(DEFAULT_MEMORY_WATERMARK);
  await rabbitmq.setDiskFreeLimit(DEFAULT_DISK_FREE_LIMIT);
  if (!(await postgres.isRunning())) await postgres.control('start');
}
