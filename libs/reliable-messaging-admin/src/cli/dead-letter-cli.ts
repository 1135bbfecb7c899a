import { Command, CommanderError } from 'commander';
import { DeadLetterNotFoundError } from '../errors/dead-letter-not-found.error';
import { EmptySelectionError } from '../errors/empty-selection.error';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { OutboxRowNotFoundError } from '../errors/outbox-row-not-found.error';
import { SagaInstanceNotFoundError } from '../errors/saga-instance-not-found.error';
import { errorMessage } from 'nestjs-reliable-messaging/operations';
import {
  CLI_EXIT,
  createCliContext,
  type CliApp,
  type CliContext,
  type DeadLetterCliIo,
} from './cli-context';
import { addAuditCommand } from './commands/audit.command';
import { addEditCommand } from './commands/edit.command';
import { addListCommand } from './commands/list.command';
import { addOutboxCommand } from './commands/outbox.command';
import { addPurgeCommand } from './commands/purge.command';
import { addQueuesCommand } from './commands/queues.command';
import { addReplayCommand } from './commands/replay.command';
import { addSagasCommand } from './commands/sagas.command';
import { addScheduledCommand } from './commands/scheduled.command';
import { addShowCommand } from './commands/show.command';

export { CLI_EXIT, type CliApp, type DeadLetterCliIo } from './cli-context';

/** The context of each program, for its exit code and to close the app it booted. */
const contexts = new WeakMap<Command, CliContext>();

/**
 * The `dlq` command line over the dead-letter and outbox operations of an app context (boot it with
 * `consumersEnabled: false` and no outbox relay so it consumes and relays nothing): `queues`, `list`, `show`,
 * `replay`, `edit`, `purge`, `audit`, `outbox list|show|retry|discard`, `scheduled list|cancel` and
 * `sagas list|show`. Given a function that boots the app,
 * each command boots it only once its arguments checked out (filters, selection, a terminal or `--yes` to confirm
 * on), never for `--help` or a usage error. Any app that imports
 * ReliableMessagingModule can expose it with a few lines (see runDeadLetterCli).
 */
export function createDeadLetterCli(app: CliApp, io: Partial<DeadLetterCliIo> = {}): Command {
  const cli = createCliContext(app, io);
  const program = new Command('dlq')
    .description(
      'Inspect, fix and replay dead letters; retry or discard parked outbox rows; list or cancel scheduled messages; inspect saga instances',
    )
    .exitOverride()
    .configureOutput({
      writeOut: (text) => cli.io.stdout.write(text),
      writeErr: (text) => cli.io.stderr.write(text),
    })
    .showHelpAfterError();
  contexts.set(program, cli);

  addQueuesCommand(program, cli);
  addListCommand(program, cli);
  addShowCommand(program, cli);
  addReplayCommand(program, cli);
  addEditCommand(program, cli);
  addPurgeCommand(program, cli);
  addAuditCommand(program, cli);
  addOutboxCommand(program, cli);
  addScheduledCommand(program, cli);
  addSagasCommand(program, cli);
  return program;
}

/**
 * Runs the command line and resolves with the exit code; it never calls process.exit. Given an app context, the
 * caller closes it; given a function that boots one, the command line boots it once the arguments checked out
 * (never for `--help` or a usage error) and closes it. `argv` is `process.argv` (node, script, arguments...).
 *
 * @example
 * process.exitCode = await runDeadLetterCli(
 *   () => NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] }),
 *   process.argv,
 * );
 */
export async function runDeadLetterCli(
  app: CliApp,
  argv: string[],
  io: Partial<DeadLetterCliIo> = {},
): Promise<number> {
  const stderr = io.stderr ?? process.stderr;
  const program = createDeadLetterCli(app, io);
  const cli = contexts.get(program);
  try {
    await program.parseAsync(argv);
    return cli?.exit.code ?? CLI_EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? CLI_EXIT.ok : CLI_EXIT.usage;
    }
    if (error instanceof InvalidDeadLetterQueryError) {
      stderr.write(`error: ${error.message}\n`);
      return CLI_EXIT.usage;
    }
    const known =
      error instanceof DeadLetterNotFoundError ||
      error instanceof OutboxRowNotFoundError ||
      error instanceof SagaInstanceNotFoundError ||
      error instanceof EmptySelectionError;
    stderr.write(`error: ${known ? error.message : errorMessage(error)}\n`);
    return CLI_EXIT.failed;
  } finally {
    await cli?.close();
  }
}
