import type { Command } from 'commander';
import { CLI_EXIT, type CliContext } from '../cli-context';
import { EmptySelectionError } from '../../errors/empty-selection.error';
import { NO_MESSAGE_ID } from '../../dead-letter/dead-letter-operation';
import { requireSelection, type DeadLetterSelection } from '../../dead-letter/dead-letter-selection';
import { limitOf, selectionOf, withFilters, type FilterFlags } from '../filter-flags';
import { reportResult } from '../operation-report';
import { ProgressReporter } from '../progress-reporter';

/**
 * `dlq purge [messageIds...]`: deletes the selected dead letters for good. Unless `--yes` or `--dry-run` is
 * given it first lists them with a dry run and asks, on a terminal, for `purge` to be typed; it then purges only
 * the dead letters that dry run showed, so one dead-lettered while the operator read the question stays.
 */
export function addPurgeCommand(program: Command, cli: CliContext): void {
  withFilters(program.command('purge [messageIds...]'))
    .description('delete dead letters for good (asks for confirmation)')
    .option('--all', 'every dead letter of the queue(s), when no other filter is given')
    .option('--dry-run', 'show what would be purged, change nothing')
    .option('-y, --yes', 'do not ask for confirmation')
    .option('--allow-empty', 'matching nothing is not an error (exit 0)')
    .option('--note <text>', 'a note for the audit record')
    .option('--json', 'print JSON')
    .action(async (messageIds: string[], flags: FilterFlags) => {
      let selection: DeadLetterSelection = selectionOf(flags, messageIds);
      requireSelection('purge', selection);
      const asks = !flags.dryRun && !flags.yes;
      if (asks) cli.requireConfirmable();
      const options = {
        actor: cli.io.actor,
        limit: limitOf(flags),
        note: flags.note,
        allowEmpty: flags.allowEmpty,
      };
      await cli.open();
      if (asks) {
        const preview = await cli.operations.purge(selection, { ...options, dryRun: true, allowEmpty: true });
        // A dead letter without a message id cannot be named, so only --yes purges it.
        const previewed = preview.messageIds.filter((id) => id !== NO_MESSAGE_ID);
        if (previewed.length === 0) {
          if (preview.messageIds.length > 0) {
            cli.print('the matching dead letters have no message id: purge them with --yes');
            cli.exit.code = CLI_EXIT.failed;
            return;
          }
          if (!flags.allowEmpty) throw new EmptySelectionError('purge');
          if (flags.json) cli.printJson(preview);
          else cli.print('no dead letter matches: nothing to purge');
          return;
        }
        const where = flags.queue ?? 'every dead-letter queue';
        const answer = await cli.confirm(
          `Purge ${previewed.length}${preview.more ? '+' : ''} dead letter(s) from ${where} for good? Type 'purge' to confirm: `,
        );
        if (answer !== 'purge') {
          cli.print('nothing purged');
          cli.exit.code = CLI_EXIT.failed;
          return;
        }
        selection = { ...selection, messageIds: [...new Set(previewed)] };
      }
      const progress = new ProgressReporter(cli.io.stderr, flags.dryRun ? 'checking' : 'purging');
      const result = await cli.operations
        .purge(selection, { ...options, dryRun: flags.dryRun, onProgress: progress.update })
        .finally(() => progress.stop());
      cli.exit.code = reportResult(cli, result, flags);
    });
}
