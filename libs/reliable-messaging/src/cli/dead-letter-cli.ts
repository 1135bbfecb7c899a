import { readFile } from 'node:fs/promises';
import { hostname, userInfo } from 'node:os';
import type { INestApplicationContext } from '@nestjs/common';
import { Command, CommanderError, Option } from 'commander';
import { DeadLetterAudit } from '../dead-letter/dead-letter-audit.service';
import { DeadLetterMonitor } from '../dead-letter/dead-letter-monitor.service';
import {
  DeadLetterOperations,
  type DeadLetterOperationResult,
  type DeadLetterSelection,
} from '../dead-letter/dead-letter-operations.service';
import { parseDeadLetterFilter } from '../dead-letter/dead-letter-filter';
import { bodyText, describeDeadLetter, type DeadLetter } from '../dead-letter/dead-letter-record';
import { DeadLetterNotFoundError } from '../errors/dead-letter-not-found.error';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { errorMessage } from '../util/error-text';
import { applyJsonEdits } from './json-edits';
import { ProgressReporter } from './progress-reporter';
import { confirm } from './confirm-prompt';

/** Where the command line reads and writes; the process's own streams by default. */
export interface DeadLetterCliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Who runs the commands, for the audit trail. Default: `<OS user>@<host>`. */
  actor?: string;
}

interface FilterFlags {
  queue?: string;
  id?: string[];
  errorClass?: string;
  type?: string;
  reason?: string;
  since?: string;
  until?: string;
  text?: string;
  limit?: string;
  all?: boolean;
  json?: boolean;
  dryRun?: boolean;
  note?: string;
  yes?: boolean;
}

/** Exit codes: 0 done, 1 the operation failed (or left failures), 2 the command was wrong. */
export const CLI_EXIT = { ok: 0, failed: 1, usage: 2 } as const;

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
  const out: DeadLetterCliIo = {
    stdout: io.stdout ?? process.stdout,
    stderr: io.stderr ?? process.stderr,
    stdin: io.stdin ?? process.stdin,
    actor: io.actor ?? defaultActor(),
  };
  const operations = app.get(DeadLetterOperations);
  const monitor = app.get(DeadLetterMonitor);
  const audit = app.get(DeadLetterAudit);
  const state = { code: CLI_EXIT.ok as number };
  const print = (text: string): void => void out.stdout.write(`${text}\n`);
  const printJson = (value: unknown): void => void print(JSON.stringify(value, null, 2));

  const program = new Command('dlq')
    .description('Inspect, fix and replay dead letters')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => out.stdout.write(text),
      writeErr: (text) => out.stderr.write(text),
    })
    .showHelpAfterError();
  exitCodes.set(program, state);

  program
    .command('queues')
    .description('depth and oldest age of every dead-letter queue')
    .option('--json', 'print JSON')
    .action(async (flags: FilterFlags) => {
      const stats = await monitor.read(operations.knownQueues());
      if (flags.json) return printJson(stats);
      print(
        table(
          ['QUEUE', 'DEAD-LETTER QUEUE', 'DEPTH', 'OLDEST'],
          stats.map((s) => [
            s.queue,
            s.deadLetterQueue,
            String(s.depth),
            s.oldestAgeSeconds === null ? '-' : age(s.oldestAgeSeconds),
          ]),
        ),
      );
    });

  withFilters(program.command('list'))
    .description('list dead letters, oldest first')
    .option('--json', 'print JSON')
    .action(async (flags: FilterFlags) => {
      const progress = new ProgressReporter(out.stderr, 'reading');
      const result = await operations
        .list(filterOf(flags), { limit: limitOf(flags, 50), onProgress: progress.update })
        .finally(() => progress.stop());
      if (flags.json) {
        return printJson({ ...result, deadLetters: result.deadLetters.map((d) => describeDeadLetter(d)) });
      }
      print(
        table(
          ['DEAD-LETTERED', 'QUEUE', 'MESSAGE ID', 'TYPE', 'REASON', 'ERROR'],
          result.deadLetters.map((d) => [
            d.deadLetteredAt?.toISOString() ?? '-',
            d.queue,
            d.messageId ?? '-',
            d.type ?? '-',
            d.reason,
            truncate(`${d.errorClass ?? ''}${d.errorMessage ? `: ${d.errorMessage}` : ''}`, 60),
          ]),
        ),
      );
      print(
        `${result.deadLetters.length} dead letter(s)${result.more ? ' (limit reached; more may match: raise --limit)' : ''}, ${result.scanned} read`,
      );
    });

  program
    .command('show <messageId>')
    .description('one dead letter in full: headers, error, body')
    .option('-q, --queue <queue>', 'the consumer queue (default: search every dead-letter queue)')
    .option('--json', 'print JSON')
    .action(async (messageId: string, flags: FilterFlags) => {
      const deadLetter = await operations.show(messageId, flags.queue);
      if (flags.json) return printJson(describeDeadLetter(deadLetter, true));
      print(describeForHumans(deadLetter));
    });

  withFilters(program.command('replay [messageIds...]'))
    .description('send dead letters back to the queue they failed in (one, a filtered set, or a time window)')
    .option('--all', 'every dead letter of the queue(s), when no other filter is given')
    .option('--dry-run', 'show what would be replayed, change nothing')
    .option('--note <text>', 'a note for the audit record (a ticket, a reason)')
    .option('--json', 'print JSON')
    .action(async (messageIds: string[], flags: FilterFlags) => {
      const progress = new ProgressReporter(out.stderr, flags.dryRun ? 'checking' : 'replaying');
      const result = await operations
        .replay(selectionOf(flags, messageIds), {
          actor: out.actor as string,
          dryRun: flags.dryRun,
          limit: limitOf(flags),
          note: flags.note,
          onProgress: progress.update,
        })
        .finally(() => progress.stop());
      state.code = report(result, flags);
    });

  program
    .command('edit <messageId>')
    .description("replace a dead letter's body, then replay it")
    .requiredOption('-q, --queue <queue>', 'the consumer queue the message failed in')
    .option('--body <json>', 'the new body')
    .option('--body-file <path>', 'read the new body from a file')
    .option(
      '--set <path=value...>',
      'change fields of the JSON body, e.g. --set quantity=2 address.zip=\'"75001"\'',
    )
    .option('--dry-run', 'show the edited body, change nothing')
    .option('--note <text>', 'a note for the audit record')
    .option('--json', 'print JSON')
    .action(
      async (
        messageId: string,
        flags: FilterFlags & { body?: string; bodyFile?: string; set?: string[] },
      ) => {
        const sources = [
          flags.body !== undefined,
          flags.bodyFile !== undefined,
          flags.set !== undefined,
        ].filter(Boolean);
        if (sources.length !== 1)
          throw new InvalidDeadLetterQueryError('give exactly one of --body, --body-file or --set');
        let body: Buffer;
        if (flags.body !== undefined) body = Buffer.from(flags.body, 'utf8');
        else if (flags.bodyFile !== undefined) body = await readFile(flags.bodyFile);
        else body = applyJsonEdits(await operations.show(messageId, flags.queue), flags.set ?? []);
        const { before, ...result } = await operations.editAndReplay(flags.queue as string, messageId, body, {
          actor: out.actor as string,
          dryRun: flags.dryRun,
          note: flags.note,
        });
        if (flags.json) {
          printJson({ ...result, before: describeDeadLetter(before, true), after: body.toString('utf8') });
          state.code = result.failures.length > 0 ? CLI_EXIT.failed : CLI_EXIT.ok;
          return;
        }
        print(`before: ${bodyText(before) ?? '(binary)'}`);
        print(`after:  ${body.toString('utf8')}`);
        state.code = report(result, flags);
      },
    );

  withFilters(program.command('purge [messageIds...]'))
    .description('delete dead letters for good (asks for confirmation)')
    .option('--all', 'every dead letter of the queue(s), when no other filter is given')
    .option('--dry-run', 'show what would be purged, change nothing')
    .option('-y, --yes', 'do not ask for confirmation')
    .option('--note <text>', 'a note for the audit record')
    .option('--json', 'print JSON')
    .action(async (messageIds: string[], flags: FilterFlags) => {
      const selection = selectionOf(flags, messageIds);
      const options = { actor: out.actor as string, limit: limitOf(flags), note: flags.note };
      if (!flags.dryRun && !flags.yes) {
        const preview = await operations.purge(selection, { ...options, dryRun: true });
        if (preview.messageIds.length === 0) {
          if (flags.json) printJson(preview);
          else print('no dead letter matches: nothing to purge');
          return;
        }
        const where = flags.queue ?? 'every dead-letter queue';
        const answer = await confirm(
          out,
          `Purge ${preview.messageIds.length}${preview.more ? '+' : ''} dead letter(s) from ${where} for good? Type 'purge' to confirm: `,
        );
        if (answer !== 'purge') {
          print('nothing purged');
          state.code = CLI_EXIT.failed;
          return;
        }
      }
      const progress = new ProgressReporter(out.stderr, flags.dryRun ? 'checking' : 'purging');
      const result = await operations
        .purge(selection, { ...options, dryRun: flags.dryRun, onProgress: progress.update })
        .finally(() => progress.stop());
      state.code = report(result, flags);
    });

  program
    .command('audit')
    .description('the latest replays, edits and purges')
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'print JSON')
    .action(async (flags: FilterFlags) => {
      const records = await audit.recent(limitOf(flags, 20));
      if (flags.json) return printJson(records);
      print(
        table(
          ['STARTED', 'ACTOR', 'ACTION', 'QUEUE', 'MESSAGES', 'OUTCOME'],
          records.map((r) => [
            r.startedAt.toISOString(),
            r.actor,
            r.action,
            r.queue ?? '*',
            String(r.messageCount),
            r.outcome,
          ]),
        ),
      );
    });

  function report(result: DeadLetterOperationResult, flags: FilterFlags): number {
    if (flags.json) printJson(result);
    else {
      const verb = { replay: 'replayed', 'edit-replay': 'replayed', purge: 'purged' }[result.action];
      const head = result.dryRun ? `would have ${verb}` : verb;
      print(
        `${head} ${result.messageIds.length} dead letter(s)${result.auditId ? ` (audit ${result.auditId})` : ''}`,
      );
      if (result.messageIds.length > 0) print(`  ${result.messageIds.join('\n  ')}`);
      for (const failure of result.failures) print(`failed: ${failure.messageId ?? '?'}: ${failure.error}`);
      if (result.more) print('the limit was reached: run again (or raise --limit) for the rest');
    }
    return result.failures.length > 0 ? CLI_EXIT.failed : CLI_EXIT.ok;
  }

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

function withFilters(command: Command): Command {
  return command
    .option('-q, --queue <queue>', 'the consumer queue (default: every dead-letter queue of the app)')
    .option('--id <messageId...>', 'only these message ids')
    .option('--error-class <class>', 'only this error class, e.g. PaymentDeclined')
    .option('--type <type>', 'only this message type, e.g. order.placed')
    .option('--reason <reason>', 'only this reason, e.g. attempts-exhausted')
    .option('--since <time>', 'dead-lettered at or after: ISO 8601 or an age (30m, 2h, 7d)')
    .option('--until <time>', 'dead-lettered before: ISO 8601 or an age')
    .option('--text <text>', 'text found in the body or the error message (case-insensitive)')
    .addOption(new Option('--limit <n>', 'the most messages to touch'));
}

function filterOf(flags: FilterFlags, messageIds: string[] = []) {
  const ids = [...messageIds, ...(flags.id ?? [])];
  return parseDeadLetterFilter({
    queue: flags.queue,
    messageIds: ids.length > 0 ? ids : undefined,
    errorClass: flags.errorClass,
    type: flags.type,
    reason: flags.reason,
    since: flags.since,
    until: flags.until,
    text: flags.text,
  });
}

function selectionOf(flags: FilterFlags, messageIds: string[]): DeadLetterSelection {
  return { ...filterOf(flags, messageIds), all: flags.all === true };
}

function limitOf(flags: FilterFlags, fallback?: number): number | undefined {
  if (flags.limit === undefined) return fallback;
  const limit = Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new InvalidDeadLetterQueryError(`--limit must be a positive integer, got '${flags.limit}'`);
  return limit;
}

function defaultActor(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
  return `${user}@${hostname()}`;
}

function describeForHumans(d: DeadLetter): string {
  const { headers, bodyEncoding, body } = describeDeadLetter(d, true);
  const lines = [
    `message id      ${d.messageId ?? '-'}`,
    `type            ${d.type ?? '-'}`,
    `queue           ${d.queue} (dead-letter queue ${d.deadLetterQueue})`,
    `reason          ${d.reason}`,
    `error           ${d.errorClass ?? '-'}: ${d.errorMessage ?? '-'}`,
    `attempts        ${d.attempts ?? '-'} (dead-lettered ${d.deadLetterCount} time(s))`,
    `first failure   ${d.firstFailureAt?.toISOString() ?? '-'}`,
    `dead-lettered   ${d.deadLetteredAt?.toISOString() ?? '-'} on ${d.host ?? '-'} by ${d.handler ?? '-'}`,
    `published to    ${d.exchange ?? '-'} with routing key ${d.routingKey ?? '-'}`,
    `idempotency key ${d.idempotencyKey ?? '-'}`,
    `correlation id  ${d.correlationId ?? '-'}`,
    '',
    'headers',
    JSON.stringify(headers, null, 2),
    '',
    `body (${String(bodyEncoding)})`,
    typeof body === 'string' ? body : JSON.stringify(body, null, 2),
  ];
  if (d.errorStack) lines.push('', 'stack', d.errorStack);
  return lines.join('\n');
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(head), ...rows.map(line)].join('\n');
}

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

function age(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86_400)}d`;
}
