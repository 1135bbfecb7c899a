import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { waitFor } from './wait-for';

const run = promisify(execFile);

/** The broker's memory high watermark outside an alarm: RabbitMQ's default, which the test broker runs with. */
export const NORMAL_MEMORY_WATERMARK = '0.4';

/**
 * Runs `work` while the local broker is in a memory alarm, and ends the alarm afterwards whatever happened:
 * `rabbitmqctl set_vm_memory_high_watermark 0.000001`, then back to {@link NORMAL_MEMORY_WATERMARK}. During the
 * alarm RabbitMQ blocks every connection that publishes, other specs' too, so keep `work` to a few seconds and
 * have it collect what it saw; assert after this resolves, once the broker is back to normal. Call
 * {@link clearMemoryAlarm} in `afterAll` as well, for a run interrupted in the middle.
 */
export async function withMemoryAlarm<T>(work: () => Promise<T>): Promise<T> {
  try {
    await run('rabbitmqctl', ['-q', 'set_vm_memory_high_watermark', '0.000001']);
    await waitFor('the memory alarm to go off', memoryAlarmOn, { timeoutMs: 10_000, intervalMs: 0 });
    return await work();
  } finally {
    await clearMemoryAlarm();
  }
}

async function memoryAlarmOn(): Promise<boolean> {
  const { stdout } = await run('rabbitmqctl', ['-q', 'eval', 'rabbit_alarm:get_alarms().']);
  return stdout.includes('memory');
}

/** Puts the broker's memory watermark back to normal, ending a memory alarm; harmless when there is none. */
export async function clearMemoryAlarm(): Promise<void> {
  await run('rabbitmqctl', ['-q', 'set_vm_memory_high_watermark', NORMAL_MEMORY_WATERMARK]);
}
