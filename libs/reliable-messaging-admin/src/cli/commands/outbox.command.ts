import { Option, type Command } from 'commander';
import { parseOutboxFilter, type OutboxFilter } from '../../outbox/outbox-filter';
import type { OutboxOperationResult } from '../../outbox/outbox-operation';
import { requireOutboxSelection, type OutboxSelection } from '../../outbox/outbox-selection';
import { CLI_EXIT, type CliContext } from '../cli-context';
import { limitArgument, limitOf, timeArgument } from '../filter-flags';
import { ProgressReporter } from '../progress-reporter';
import { table, truncate } from '../text-output';

/** The options the outbox commands take, as commander parses them. */
interface OutboxFlags {
  id?: string[];
  type?: string;
  orderingKey?: string;
  since?: string;
  until?: string;
  text?: string;
  limit?: string;
  all?: boolean;
  json?: boolean;
  dryRun?: boolean;
  allowEmpty?: boolean;
  note?: string;
  yes?: boolean;
}

function withOutboxFilters(command: Command): Command {
  return command
    .option('--id <id...>', 'only these rows: outbox row ids or message ids')
    .option('--type <type>', 'only this message type, e.g. order.placed')
    .option('--ordering-key <key>', 'only this ordering key')
    .option('--since <time>', 'parked at or after: ISO 8601 or an age (30m, 2h, 7d)', timeArgument('since'))
    .option('--until <time>', 'parked before: ISO 8601 or an age', timeArgument('until'))
    .option('--text <text>', 'text found in the body or the reason it was parked (case-insensitive)')
    .addOption(new Option('--limit <n>', 'the most rows to touch').argParser(limitArgument));
}

function filterOf(flags: OutboxFlags, ids: string[] = []): OutboxFilter {
  const all = [...ids, ...(flags.id ?? [])];
  return parseOutboxFilter({
    ids: all.length > 0 ? all : undefined,
    type: flags.type,
    orderingKey: flags.orderingKey,
    since: flags.since,
    until: flags.until,
    text: flags.text,
  });
}

/**
 * `dlq outbox list|show|retry|discard`: the outbox rows the relay parked as unpublishable (unroutable, no such
 * exchange, too large). A parked row holds back the later rows of its ordering key; `retry` puts it back in its
 * place once the cause is fixed, `discard` deletes it and releases them.
 */
export function addOutboxCommand(program: Command, cli: CliContext): void {
  const outbox = program
    .command('outbox')
    .description('parked outbox rows: list, show, retry, discard')
    .showHelpAfterError();

  withOutboxFilters(outbox.command('list'))
    .description('list parked outbox rows, oldest first')
    .option('--json', 'print JSON')
    .action(async (flags: OutboxFlags) => {
      const filter = filterOf(flags);
      const limit = limitOf(flags, 50);
      await cli.open();
      const result = await cli.outbox.list(filter, { limit });
      if (flags.json) return cli.printJson(result);
      cli.print(
        table(
          ['ROW', 'PARKED', 'MESSAGE ID', 'TYPE', 'ORDERING KEY', 'HOLDING BACK', 'REASON'],
          result.rows.map((row) => [
            row.id,
            row.parkedAt?.toISOString() ?? '-',
            row.messageId,
            row.type ?? '-',
            row.orderingKey ?? '-',
            String(row.holdingBack),
            truncate(row.reason ?? '-', 60),
          ]),
        ),
      );
      const holding = result.rows.reduce((sum, row) => sum + row.holdingBack, 0);
      cli.print(
        `${result.rows.length} parked row(s)${result.more ? ' (limit reached; more may match: raise --limit)' : ''}` +
          (holding > 0 ? `, holding back ${holding} later row(s) of their ordering keys` : ''),
      );
    });

  outbox
    .command('show <id>')
    .description('one parked row in full, by outbox row id or message id')
    .option('--json', 'print JSON')
    .action(async (id: string, flags: OutboxFlags) => {
      await cli.open();
      const row = await cli.outbox.show(id);
      if (flags.json) return cli.printJson(row);
      cli.print(
        [
          `row             ${row.id}`,
          `message id      ${row.messageId}`,
          `type            ${row.type ?? '-'}`,
          `published to    ${row.exchange} with routing key ${row.routingKey}`,
          `ordering key    ${row.orderingKey ?? '-'}` +
            (row.holdingBack > 0 ? ` (holding back ${row.holdingBack} later row(s) of this key)` : ''),
          `reason          ${row.reason ?? '-'}`,
          `written         ${row.createdAt.toISOString()}`,
          `parked          ${row.parkedAt?.toISOString() ?? '-'}`,
          '',
          'properties',
          JSON.stringify(row.properties, null, 2),
          '',
          `body (${row.bodyEncoding}, ${row.bodyBytes} bytes)`,
          row.body,
        ].join('\n'),
      );
    });

  for (const action of ['retry', 'discard'] as const) {
    const described =
      action === 'retry'
        ? 'put parked rows back for the relay, in their place in their ordering key'
        : 'delete parked rows for good, releasing the later rows of their ordering keys (asks for confirmation)';
    withOutboxFilters(outbox.command(`${action} [ids...]`))
      .description(described)
      .option('--all', 'every parked row, when no filter is given')
      .option(
        '--dry-run',
        `show what would be ${action === 'retry' ? 'retried' : 'discarded'}, change nothing`,
      )
      .option('--allow-empty', 'matching nothing is not an error (exit 0)')
      .option('-y, --yes', 'do not ask for confirmation (discard)')
      .option('--note <text>', 'a note for the audit record (a ticket, a reason)')
      .option('--json', 'print JSON')
      .action(async (ids: string[], flags: OutboxFlags) => {
        let selection: OutboxSelection = { ...filterOf(flags, ids), all: flags.all === true };
        requireOutboxSelection(action, selection);
        const asks = action === 'discard' && !flags.dryRun && !flags.yes;
        if (asks) cli.requireConfirmable();
        const options = {
          actor: cli.io.actor,
          limit: limitOf(flags),
          note: flags.note,
          allowEmpty: flags.allowEmpty,
        };
        await cli.open();
        const run = (dryRun: boolean, onProgress?: (done: number, total: number) => void) =>
          action === 'retry'
            ? cli.outbox.retry(selection, { ...options, dryRun, onProgress })
            : cli.outbox.discard(selection, { ...options, dryRun, onProgress });
        if (asks) {
          const preview = await run(true);
          if (preview.ids.length === 0) {
            if (flags.json) cli.printJson(preview);
            else cli.print('no parked row matches: nothing to discard');
            return;
          }
          const answer = await cli.confirm(
            `Discard ${preview.ids.length}${preview.more ? '+' : ''} parked outbox row(s) for good? Type 'discard' to confirm: `,
          );
          if (answer !== 'discard') {
            cli.print('nothing discarded');
            cli.exit.code = CLI_EXIT.failed;
            return;
          }
          // Only the rows the operator saw: one parked while the question was read stays parked.
          selection = { ...selection, ids: preview.ids };
        }
        const progress = new ProgressReporter(cli.io.stderr, flags.dryRun ? 'checking' : action);
        const result = await run(flags.dryRun === true, progress.update).finally(() => progress.stop());
        report(cli, result, flags);
      });
  }
}

function report(cli: CliContext, result: OutboxOperationResult, flags: OutboxFlags): void {
  if (flags.json) return cli.printJson(result);
  const verb = result.action === 'outbox-retry' ? 'retried' : 'discarded';
  cli.print(
    `${result.dryRun ? `would have ${verb}` : verb} ${result.ids.length} parked outbox row(s)` +
      (result.auditId ? ` (audit ${result.auditId})` : ''),
  );
  for (const [index, id] of result.ids.entries()) cli.print(`  ${id}  ${result.messageIds[index]}`);
  if (result.more) cli.print('the limit was reached: run again (or raise --limit) for the rest');
}
