// @ts-check
/**
 * Jest's global setup and teardown: deletes every queue and exchange named `rm-e2e-…` on a broker on this
 * machine. Specs delete what they tracked as they end (TestBroker.deleteByPrefix, over AMQP); this sweeps up
 * what one left besides (a child app's declarations, a spec that crashed), once before the run and once after,
 * and says how much it found. Listing names needs `rabbitmqctl` (a second or two a call), which is why the
 * specs themselves do not list. Never fails the run.
 *
 * Only when `RM_E2E_SWEEP=1` (`npm test` sets it): it would also delete what another Jest run on this machine is
 * using at the time.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import process from 'node:process';
import amqp from 'amqplib';

const run = promisify(execFile);
const PREFIX = 'rm-e2e-';
const URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** @param {'list_queues' | 'list_exchanges'} command */
async function namesUnderPrefix(command) {
  const { stdout } = await run('rabbitmqctl', ['-q', command, '--no-table-headers', 'name'], {
    timeout: 60_000,
  });
  return stdout.split('\n').filter((name) => name.startsWith(PREFIX));
}

export default async function sweepBroker() {
  if (process.env.RM_E2E_SWEEP !== '1') return;
  const host = new globalThis.URL(URL).hostname;
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(host)) return;
  try {
    const [queues, exchanges] = await Promise.all([
      namesUnderPrefix('list_queues'),
      namesUnderPrefix('list_exchanges'),
    ]);
    if (queues.length + exchanges.length === 0) return;
    const connection = await amqp.connect(URL);
    try {
      const channel = await connection.createChannel();
      for (const queue of queues) await channel.deleteQueue(queue);
      for (const exchange of exchanges) await channel.deleteExchange(exchange);
    } finally {
      await connection.close();
    }
    process.stdout.write(
      `\nbroker sweep: deleted ${queues.length} queue(s) and ${exchanges.length} exchange(s) named ${PREFIX}…\n`,
    );
  } catch (error) {
    process.stdout.write(
      `\nbroker sweep skipped: ${error instanceof Error ? error.message : String(error)}\n`,
    );
  }
}
