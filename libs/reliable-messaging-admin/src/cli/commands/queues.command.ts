import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import type { FilterFlags } from '../filter-flags';
import { age, table } from '../text-output';

/** `dlq queues`: depth and oldest age of every dead-letter queue. */
export function addQueuesCommand(program: Command, cli: CliContext): void {
  program
    .command('queues')
    .description('depth and oldest age of every dead-letter queue')
    .option('--json', 'print JSON')
    .action(async (flags: FilterFlags) => {
      await cli.open();
      const stats = await cli.monitor.read(cli.operations.knownQueues());
      if (flags.json) return cli.printJson(stats);
      cli.print(
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
}
