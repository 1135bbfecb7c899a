import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { limitOf, type FilterFlags } from '../filter-flags';
import { table } from '../text-output';

/** `dlq audit`: the latest replays, edits, purges and outbox retries and discards from the audit trail. */
export function addAuditCommand(program: Command, cli: CliContext): void {
  program
    .command('audit')
    .description('the latest replays, edits, purges, outbox retries and discards')
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'print JSON')
    .action(async (flags: FilterFlags) => {
      const limit = limitOf(flags, 20);
      await cli.open();
      const records = await cli.audit.recent(limit);
      if (flags.json) return cli.printJson(records);
      cli.print(
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
}
