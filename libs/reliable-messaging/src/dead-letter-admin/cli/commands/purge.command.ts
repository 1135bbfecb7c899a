import type { Command } from 'commander';
import { CLI_EXIT, type CliContext } from '../cli-context';
import { EmptySelectionError } from '../../../errors/empty-selection.error';
import { confirm } from '../confirm-prompt';
import { limitOf, selectionOf, withFilters, type FilterFlags } from '../filter-flags';
import { reportResult } from '../operation-report';
import { ProgressReporter } from '../progress-reporter';

/**
 * `dlq purge [messageIds...]`: deletes the selected dead letters for good. Unless `--yes` or `--dry-run` is
 * given it first counts them with a dry run and asks, on a terminal, for `purge` to be typed.
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
      const selection = selectionOf(flags, messageIds);
      const options = {
        actor: cli.io.actor,
        limit: limitOf(flags),
        note: flags.note,
        allowEmpty: flags.allowEmpty,
      };
      if (!flags.dryRun && !flags.yes) {
        const preview = await cli.operations.purge(selection, { ...options, dryRun: true, allowEmpty: true });
        if (preview.messageIds.length === 0) {
          if (!flags.allowEmpty) throw new EmptySelectionError('purge');
          if (flags.json) cli.printJson(preview);
          else cli.print('no dead letter matches: nothing to purge');
          return;
        }
        const where = flags.queue ?? 'every dead-letter queue';
        const answer = await confirm(
          cli.io,
          `Purge ${preview.messageIds.length}${preview.more ? '+' : ''} dead letter(s) from ${where} for good? Type 'purge' to confirm: `,
        );
        if (answer !== 'purge') {
          cli.print('nothing purged');
          cli.exit.code = CLI_EXIT.failed;
          return;
        }
      }
      const progress = new ProgressReporter(cli.io.stderr, flags.dryRun ? 'checking' : 'purging');
      const result = await cli.operations
        .purge(selection, { ...options, dryRun: flags.dryRun, onProgress: progress.update })
        .finally(() => progress.stop());
      cli.exit.code = reportResult(cli, result, flags);
    });
}
