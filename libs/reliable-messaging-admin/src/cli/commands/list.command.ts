import type { Command } from 'commander';
import { describeDeadLetter } from '../../dead-letter/dead-letter-view';
import type { CliContext } from '../cli-context';
import { filterOf, limitOf, withFilters, type FilterFlags } from '../filter-flags';
import { ProgressReporter } from '../progress-reporter';
import { table, truncate } from '../text-output';

/** `dlq list`: dead letters matching the filters, oldest first (50 unless `--limit` says otherwise). */
export function addListCommand(program: Command, cli: CliContext): void {
  withFilters(program.command('list'))
    .description('list dead letters, oldest first')
    .option('--json', 'print JSON')
    .action(async (flags: FilterFlags) => {
      const filter = filterOf(flags);
      const limit = limitOf(flags, 50);
      await cli.open();
      const progress = new ProgressReporter(cli.io.stderr, 'reading');
      const result = await cli.operations
        .list(filter, { limit, onProgress: progress.update })
        .finally(() => progress.stop());
      if (flags.json) {
        return cli.printJson({
          ...result,
          deadLetters: result.deadLetters.map((d) => describeDeadLetter(d)),
        });
      }
      cli.print(
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
      cli.print(
        `${result.deadLetters.length} dead letter(s)${result.more ? ' (limit reached; more may match: raise --limit)' : ''}, ${result.scanned} read`,
      );
    });
}
