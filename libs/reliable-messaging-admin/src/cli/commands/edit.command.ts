import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { bodyText } from 'nestjs-reliable-messaging/operations';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';
import { describeDeadLetter } from '../../dead-letter/dead-letter-view';
import { CLI_EXIT, type CliContext } from '../cli-context';
import type { FilterFlags } from '../filter-flags';
import { applyJsonEdits } from '../json-edits';
import { reportResult } from '../operation-report';

type EditFlags = FilterFlags & { body?: string; bodyFile?: string; set?: string[] };

/** `dlq edit <messageId>`: replaces a dead letter's body (given whole, from a file, or field by field), then replays it. */
export function addEditCommand(program: Command, cli: CliContext): void {
  program
    .command('edit <messageId>')
    .description("replace a dead letter's body, then replay it")
    .requiredOption('-q, --queue <queue>', 'the consumer queue the message failed in')
    .option('--body <json>', 'the new body')
    .option('--body-file <path>', 'read the new body from a file')
    .option(
      '--set <path=value...>',
      'change fields of the JSON body, e.g. --set quantity=2 address.zip=\'"75001"\'',
    )
    .option('--dry-run', 'show the edited body, change nothing')
    .option('--note <text>', 'a note for the audit record')
    .option('--json', 'print JSON')
    .action(async (messageId: string, flags: EditFlags) => {
      requireOneBodySource(flags);
      await cli.open();
      const body = await newBody(cli, messageId, flags);
      const { before, ...result } = await cli.operations.editAndReplay(
        flags.queue as string,
        messageId,
        body,
        {
          actor: cli.io.actor,
          dryRun: flags.dryRun,
          note: flags.note,
        },
      );
      if (flags.json) {
        cli.printJson({ ...result, before: describeDeadLetter(before, true), after: body.toString('utf8') });
        cli.exit.code = result.failures.length > 0 ? CLI_EXIT.failed : CLI_EXIT.ok;
        return;
      }
      cli.print(`before: ${bodyText(before) ?? '(binary)'}`);
      cli.print(`after:  ${body.toString('utf8')}`);
      cli.exit.code = reportResult(cli, result, flags);
    });
}

function requireOneBodySource(flags: EditFlags): void {
  const sources = [flags.body !== undefined, flags.bodyFile !== undefined, flags.set !== undefined].filter(
    Boolean,
  );
  if (sources.length !== 1)
    throw new InvalidDeadLetterQueryError('give exactly one of --body, --body-file or --set');
}

/** The body from the one of `--body`, `--body-file` or `--set` given. */
async function newBody(cli: CliContext, messageId: string, flags: EditFlags): Promise<Buffer> {
  if (flags.body !== undefined) return Buffer.from(flags.body, 'utf8');
  if (flags.bodyFile !== undefined) return readFile(flags.bodyFile);
  return applyJsonEdits(await cli.operations.show(messageId, flags.queue), flags.set ?? []);
}
