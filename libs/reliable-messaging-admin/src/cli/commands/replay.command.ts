import type { Command } from 'commander';
import { requireSelection } from '../../dead-letter/dead-letter-selection';
import type { CliContext } from '../cli-context';
import { limitOf, selectionOf, withFilters, type FilterFlags } from '../filter-flags';
import { reportResult } from '../operation-report';
import { ProgressReporter } from '../progress-reporter';

/** `dlq replay [messageIds...]`: sends the selected dead letters back to the queue they failed in. */
export function addReplayCommand(program: Command, cli: CliContext): void {
  withFilters(program.command('replay [messageIds...]'))
    .description('send dead letters back to the queue they failed in (one, a filtered set, or a time window)')
    .option('--all', 'every dead letter of the queue(s), when no other filter is given')
    .option('--dry-run', 'show what would be replayed, change nothing')
    .option('--allow-empty', 'matching nothing is not an error (exit 0)')
    .option('--note <text>', 'a note for the audit record (a ticket, a reason)')
    .option('--json', 'print JSON')
    .action(async (messageIds: string[], flags: FilterFlags) => {
      const selection = selectionOf(flags, messageIds);
      requireSelection('replay', selection);
      const limit = limitOf(flags);
      await cli.open();
      const progress = new ProgressReporter(cli.io.stderr, flags.dryRun ? 'checking' : 'replaying');
      const result = await cli.operations
        .replay(selection, {
          actor: cli.io.actor,
          dryRun: flags.dryRun,
          limit,
          note: flags.note,
          allowEmpty: flags.allowEmpty,
          onProgress: progress.update,
        })
        .finally(() => progress.stop());
      cli.exit.code = reportResult(cli, result, flags);
    });
}
