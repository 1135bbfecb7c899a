import type { Command } from 'commander';
import { describeDeadLetter } from '../../dead-letter/dead-letter-view';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';
import type { CliContext } from '../cli-context';
import { filterOf, limitOf, withFilters, type FilterFlags } from '../filter-flags';
import { ProgressReporter } from '../progress-reporter';
import { table, truncate } from '../text-output';

/**
 * `dlq list`: dead letters matching the filters, oldest first (50 unless `--limit` says otherwise), without
 * their bodies (`dlq show` prints one); the read stops after `--max-read-mib` (64 unless said otherwise).
 */
export function addListCommand(program: Command, cli: CliContext): void {
  withFilters(program.command('list'))
    .description('list dead letters, oldest first')
    .option('--json', 'print JSON')
    .option('--max-read-mib <mib>', 'stop reading after this many MiB, bodies included (default 64)')
    .action(async (flags: FilterFlags & { maxReadMib?: string }) => {
      const filter = filterOf(flags);
      const limit = limitOf(flags, 50);
      const maxReadMib = flags.maxReadMib === undefined ? 64 : Number(flags.maxReadMib);
      if (!Number.isInteger(maxReadMib) || maxReadMib < 1)
        throw new InvalidDeadLetterQueryError(
          `--max-read-mib must be a positive integer, got '${String(flags.maxReadMib)}'`,
        );
      await cli.open();
      const progress = new ProgressReporter(cli.io.stderr, 'reading');
      const result = await cli.operations
        .list(filter, { limit, onProgress: progress.update, maxReadBytes: maxReadMib * 1024 * 1024 })
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
        `${result.deadLetters.length} dead letter(s)${
          result.stoppedAtReadBudget
            ? ` (the read stopped after ${maxReadMib} MiB; more may match: narrow the filters or raise --max-read-mib)`
            : result.more
              ? ' (limit reached; more may match: raise --limit)'
              : ''
        }, ${result.scanned} read`,
      );
    });
}
