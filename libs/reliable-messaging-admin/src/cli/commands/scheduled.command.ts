import { Option, type Command } from 'commander';
import type { ScheduledCancelResult } from '../../scheduled/scheduled-operation';
import { parseCancelTarget, parseDueBefore, parseScheduledFilter } from '../../scheduled/scheduled-filter';
import { CLI_EXIT, type CliContext } from '../cli-context';
import { limitArgument, limitOf } from '../filter-flags';
import { table, truncate } from '../text-output';

/** The options the scheduled commands take, as commander parses them. */
interface ScheduledFlags {
  type?: string;
  dueBefore?: string;
  after?: string;
  limit?: string;
  idempotencyKey?: string;
  json?: boolean;
  dryRun?: boolean;
  allowEmpty?: boolean;
  note?: string;
  yes?: boolean;
}

/**
 * `dlq scheduled list|cancel`: the messages published with `deliverAt` or `delayMs` that are not due yet. A
 * cancel deletes one by its message id (or every one of an idempotency key) before it enters the outbox; it asks
 * for confirmation and is audited as `scheduled-cancel`.
 */
export function addScheduledCommand(program: Command, cli: CliContext): void {
  const scheduled = program
    .command('scheduled')
    .description('scheduled messages not due yet: list, cancel')
    .showHelpAfterError();

  scheduled
    .command('list')
    .description('list scheduled messages, the first due first')
    .option('--type <type>', 'only this message type, e.g. order.reminder')
    .option(
      '--due-before <time>',
      'due before: ISO 8601 or a time ahead (30m, 2h, 7d)',
      (value: string) => (parseDueBefore(value), value),
    )
    .option('--after <cursor>', "the page after this one: the 'next' cursor a previous list printed")
    .addOption(new Option('--limit <n>', 'the most rows to list').argParser(limitArgument))
    .option('--json', 'print JSON')
    .action(async (flags: ScheduledFlags) => {
      const filter = parseScheduledFilter({
        type: flags.type,
        dueBefore: flags.dueBefore,
        after: flags.after,
      });
      const limit = limitOf(flags, 50);
      await cli.open();
      const result = await cli.scheduled.list(filter, { limit });
      if (flags.json) return cli.printJson(result);
      cli.print(
        table(
          ['DUE', 'MESSAGE ID', 'TYPE', 'IDEMPOTENCY KEY', 'ROUTING KEY', 'ORDERING KEY'],
          result.rows.map((row) => [
            row.deliverAt.toISOString(),
            row.messageId,
            truncate(row.type ?? '-', 40),
            truncate(row.idempotencyKey, 40),
            truncate(row.routingKey, 40),
            truncate(row.orderingKey ?? '-', 40),
          ]),
        ),
      );
      cli.print(
        `${result.rows.length} scheduled message(s)` +
          (result.more ? ` (limit reached; next page: --after ${result.next})` : ''),
      );
    });

  scheduled
    .command('cancel [messageId]')
    .description(
      'cancel a scheduled message before it is due, by message id or --idempotency-key (asks for confirmation)',
    )
    .option('--idempotency-key <key>', 'every scheduled message of this idempotency key')
    .option('--dry-run', 'show what would be cancelled, change nothing')
    .option('--allow-empty', 'matching nothing is not an error (exit 0)')
    .option('-y, --yes', 'do not ask for confirmation')
    .option('--note <text>', 'a note for the audit record (a ticket, a reason)')
    .option('--json', 'print JSON')
    .action(async (messageId: string | undefined, flags: ScheduledFlags) => {
      const target = parseCancelTarget({ messageId, idempotencyKey: flags.idempotencyKey });
      const asks = !flags.dryRun && !flags.yes;
      if (asks) cli.requireConfirmable();
      const options = { actor: cli.io.actor, note: flags.note, allowEmpty: flags.allowEmpty };
      await cli.open();
      if (asks) {
        const preview = await cli.scheduled.cancel(target, { ...options, dryRun: true, allowEmpty: true });
        if (preview.messageIds.length === 0) {
          if (flags.json) cli.printJson(preview);
          else cli.print('no scheduled message matches: nothing to cancel');
          if (!flags.allowEmpty) cli.exit.code = CLI_EXIT.failed;
          return;
        }
        const answer = await cli.confirm(
          `Cancel ${preview.messageIds.length} scheduled message(s)? They will never be sent. Type 'cancel' to confirm: `,
        );
        if (answer !== 'cancel') {
          cli.print('nothing cancelled');
          cli.exit.code = CLI_EXIT.failed;
          return;
        }
      }
      report(cli, await cli.scheduled.cancel(target, { ...options, dryRun: flags.dryRun === true }), flags);
    });
}

function report(cli: CliContext, result: ScheduledCancelResult, flags: ScheduledFlags): void {
  if (flags.json) return cli.printJson(result);
  cli.print(
    result.dryRun
      ? `would have cancelled ${result.messageIds.length} scheduled message(s)`
      : `cancelled ${result.cancelled} scheduled message(s)${result.auditId ? ` (audit ${result.auditId})` : ''}`,
  );
  for (const id of result.messageIds) cli.print(`  ${id}`);
}
