import type { Command } from 'commander';
import { auditBodyRead } from '../../audit/body-read-audit';
import { describeDeadLetter } from '../../dead-letter/dead-letter-view';
import type { CliContext } from '../cli-context';
import type { FilterFlags } from '../filter-flags';
import { describeForHumans } from '../text-output';

/** `dlq show <messageId>`: one dead letter in full; the read is audited before the body is printed, as in the API. */
export function addShowCommand(program: Command, cli: CliContext): void {
  program
    .command('show <messageId>')
    .description('one dead letter in full: headers, error, body')
    .option('-q, --queue <queue>', 'the consumer queue (default: search every dead-letter queue)')
    .option('--json', 'print JSON')
    .action(async (messageId: string, flags: FilterFlags) => {
      await cli.open();
      const deadLetter = await cli.operations.show(messageId, flags.queue);
      await auditBodyRead(cli.audit, cli.io.actor, {
        deadLetterQueue: deadLetter.deadLetterQueue,
        messageId: deadLetter.messageId ?? messageId,
      });
      if (flags.json) return cli.printJson(describeDeadLetter(deadLetter, true));
      cli.print(describeForHumans(deadLetter));
    });
}
