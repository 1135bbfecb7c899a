import type { INestApplicationContext } from '@nestjs/common';
import { Command, CommanderError } from 'commander';
import { DeadLetterNotFoundError } from '../../errors/dead-letter-not-found.error';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';
import { errorMessage } from '../../util/error-text';
import { CLI_EXIT, createCliContext, type DeadLetterCliIo } from './cli-context';
import { addAuditCommand } from './commands/audit.command';
import { addEditCommand } from './commands/edit.command';
import { addListCommand } from './commands/list.command';
import { addPurgeCommand } from './commands/purge.command';
import { addQueuesCommand } from './commands/queues.command';
import { addReplayCommand } from './commands/replay.command';
import { addShowCommand } from './commands/show.command';

export { CLI_EXIT, type DeadLetterCliIo } from './cli-context';

/** The exit code each program's last action chose. */
const exitCodes = new WeakMap<Command, { code: number }>();

/**
 * The `dlq` command line over the dead-letter operations of an app context (boot it with
 * `consumersEnabled: false` so it consumes nothing): `queues`, `list`, `show`, `replay`, `edit`, `purge`,
 * `audit`. Any app that imports ReliableMessagingModule can expose it with a few lines (see runDeadLetterCli).
 */
export function createDeadLetterCli(
  app: INestApplicationContext,
  io: Partial<DeadLetterCliIo> = {},
): Command {
  const cli = createCliContext(app, io);
  const program = new Command('dlq')
    .description('Inspect, fix and replay dead letters')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => cli.io.stdout.write(text),
      writeErr: (text) => cli.io.stderr.write(text),
    })
    .showHelpAfterError();
  exitCodes.set(program, cli.exit);

  addQueuesCommand(program, cli);
  addListCommand(program, cli);
  addShowCommand(program, cli);
  addReplayCommand(program, cli);
  addEditCommand(program, cli);
  addPurgeCommand(program, cli);
  addAuditCommand(program, cli);
  return program;
}

/**
 * Runs the command line on an app context and resolves with the exit code; it never calls process.exit, so
 * the caller closes the app first. `argv` is `process.argv` (node, script, arguments...).
 *
 * @example
 * const app = await NestFactory.createApplicationContext(AppModule.forCli(), { logger: ['error', 'warn'] });
 * const code = await runDeadLetterCli(app, process.argv);
 * await app.close();
 * process.exitCode = code;
 */
export async function runDeadLetterCli(
  app: INestApplicationContext,
  argv: string[],
  io: Partial<DeadLetterCliIo> = {},
): Promise<number> {
  const stderr = io.stderr ?? process.stderr;
  const program = createDeadLetterCli(app, io);
  try {
    await program.parseAsync(argv);
    return exitCodes.get(program)?.code ?? CLI_EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? CLI_EXIT.ok : CLI_EXIT.usage;
    }
    if (error instanceof InvalidDeadLetterQueryError) {
      stderr.write(`error: ${error.message}\n`);
      return CLI_EXIT.usage;
    }
    stderr.write(
      `error: ${error instanceof DeadLetterNotFoundError ? error.message : errorMessage(error)}\n`,
    );
    return CLI_EXIT.failed;
  }
}
