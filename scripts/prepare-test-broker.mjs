// @ts-check
/**
 * Readies a RabbitMQ on this machine for the test suite, before Jest starts: resets the memory and disk limits to this
 * machine's defaults, in case a fault test that failed half-way left an alarm raised that would block every
 * publisher, and raises the broker's file-handle budget (below). A broker elsewhere is left alone. Never fails the run: when a step cannot be done, it says in one
 * line how to do it by hand, and the specs that need it fail with their own message.
 */
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { URL } from 'node:url';

/** RabbitMQ's defaults, which this machine's broker runs with (see `rabbitmqctl environment`). */
const MEMORY_HIGH_WATERMARK = '0.4';
const DISK_FREE_LIMIT = '50MB';
const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
const COMMAND_TIMEOUT_MS = 60_000;
/** The file-handle budget the suite needs (see raiseFileHandleBudget). */
const FILE_HANDLE_BUDGET = 4000;

const host = hostOf(process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672');
if (LOCAL_HOSTS.has(host)) {
  const reset =
    run('rabbitmqctl', ['set_vm_memory_high_watermark', MEMORY_HIGH_WATERMARK]) ??
    run('rabbitmqctl', ['set_disk_free_limit', DISK_FREE_LIMIT]);
  if (reset) say(`could not reset the broker's memory and disk limits (${reset})`);
  const budget = raiseFileHandleBudget();
  if (budget) say(`could not raise the broker's file-handle budget (${budget})`);
}

/**
 * Raises RabbitMQ's file-handle budget (its `file_handle_cache` limit, not the descriptor limit of the process)
 * to FILE_HANDLE_BUDGET when it is lower; returns why that failed, or undefined.
 *
 * With Debian's 1024 descriptors the budget is 927, and every quorum queue reserves about three handles from it
 * whether or not it has a file open. The specs declare quorum queues by the dozen, two specs at a time; at about
 * 300 queues the budget is spent and the broker completes no AMQP handshake at all, for anyone (`rabbitmqctl
 * status` shows it as `File Descriptors: Total: 930, limit: 927`), while the process holds some 60 real
 * descriptors. The raised budget lasts until the broker's application restarts.
 */
function raiseFileHandleBudget() {
  return run('rabbitmqctl', [
    'eval',
    `case file_handle_cache:get_limit() < ${FILE_HANDLE_BUDGET} of true -> file_handle_cache:set_limit(${FILE_HANDLE_BUDGET}); false -> ok end.`,
  ]);
}

/**
 * The host of the first URL in `urls` (comma-separated, as AMQP_URL may be), or the text itself.
 * @param {string} urls
 */
function hostOf(urls) {
  const first = urls.split(',')[0].trim();
  try {
    return new URL(first).hostname;
  } catch {
    return first;
  }
}

/**
 * Runs a RabbitMQ CLI tool quietly; returns why it failed, or undefined when it worked.
 * @param {string} tool
 * @param {string[]} args
 */
function run(tool, args) {
  const result = spawnSync(tool, ['-q', ...args], { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS });
  if (result.error) {
    const code = /** @type {NodeJS.ErrnoException} */ (result.error).code;
    return code === 'ENOENT' ? `${tool} is not on PATH` : `${tool}: ${result.error.message}`;
  }
  if (result.status === 0) return undefined;
  const lines = `${result.stderr}\n${result.stdout}`.split('\n').map((line) => line.trim());
  return `${tool} ${args[0]}: ${lines.find((line) => line !== '') ?? `exit code ${result.status}`}`;
}

/** @param {string} line */
function say(line) {
  process.stderr.write(`prepare-test-broker: ${line}\n`);
}
