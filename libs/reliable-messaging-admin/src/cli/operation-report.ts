import type { DeadLetterOperationResult } from '../dead-letter/dead-letter-operation';
import { CLI_EXIT, type CliContext } from './cli-context';
import type { FilterFlags } from './filter-flags';

/**
 * Prints what a replay, edit or purge did (or would do), as JSON with `--json`, and returns its exit code:
 * failed when any selected message could not be handled.
 */
export function reportResult(cli: CliContext, result: DeadLetterOperationResult, flags: FilterFlags): number {
  if (flags.json) cli.printJson(result);
  else {
    const verb = { replay: 'replayed', 'edit-replay': 'replayed', purge: 'purged' }[result.action];
    const head = result.dryRun ? `would have ${verb}` : verb;
    cli.print(
      `${head} ${result.messageIds.length} dead letter(s)${result.auditId ? ` (audit ${result.auditId})` : ''}`,
    );
    if (result.messageIds.length > 0) cli.print(`  ${result.messageIds.join('\n  ')}`);
    for (const failure of result.failures) cli.print(`failed: ${failure.messageId ?? '?'}: ${failure.error}`);
    if (result.more) cli.print('the limit was reached: run again (or raise --limit) for the rest');
  }
  return result.failures.length > 0 ? CLI_EXIT.failed : CLI_EXIT.ok;
}
