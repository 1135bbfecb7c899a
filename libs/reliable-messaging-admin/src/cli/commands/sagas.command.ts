import { Option, type Command } from 'commander';
import type { SagaInstanceDetail } from '../../saga/saga-operation';
import { visibleText } from '../../http/console/html';
import { type CliContext } from '../cli-context';
import { limitArgument, limitOf } from '../filter-flags';
import { table, truncate } from '../text-output';

/** The options the saga commands take, as commander parses them. */
interface SagaFlags {
  saga: string;
  status?: string;
  after?: string;
  limit?: string;
  history?: string;
  json?: boolean;
}

/**
 * `dlq sagas list|show`: the instances of a saga and one instance in full (state, version, status, the messages
 * its steps handled, newest first, and the timeouts it waits for). Read-only.
 */
export function addSagasCommand(program: Command, cli: CliContext): void {
  const sagas = program.command('sagas').description('saga instances: list, show').showHelpAfterError();

  sagas
    .command('list')
    .description('list the instances of a saga, in correlation-key order')
    .requiredOption('--saga <name>', "the saga's name, as @Saga({ name }) gives it")
    .addOption(
      new Option('--status <status>', 'only instances with this status').choices(['active', 'completed']),
    )
    .option('--after <correlationKey>', "the page after this one: the 'next' key a previous list printed")
    .addOption(new Option('--limit <n>', 'the most instances to list').argParser(limitArgument))
    .option('--json', 'print JSON')
    .action(async (flags: SagaFlags) => {
      const limit = limitOf(flags, 50);
      await cli.open();
      const result = await cli.sagas.list(flags.saga, { status: flags.status, after: flags.after, limit });
      if (flags.json) return cli.printJson(result);
      cli.print(
        table(
          ['CORRELATION KEY', 'STATUS', 'VERSION', 'TIMEOUTS', 'UPDATED', 'COMPLETED'],
          result.instances.map((instance) => [
            truncate(visibleText(instance.correlationKey), 60),
            instance.status,
            String(instance.version),
            String(instance.pendingTimeouts),
            new Date(instance.updatedAt).toISOString(),
            instance.completedAt ? new Date(instance.completedAt).toISOString() : '-',
          ]),
        ),
      );
      cli.print(
        `${result.instances.length} instance(s)` +
          (result.more ? ` (limit reached; next page: --after ${JSON.stringify(result.next)})` : ''),
      );
    });

  sagas
    .command('show <sagaName> <correlationKey>')
    .description('one instance in full: state, version, status, history newest first, pending timeouts')
    .addOption(
      new Option('--history <n>', 'the most history entries to show (default 50)').argParser(limitArgument),
    )
    .option('--json', 'print JSON')
    .action(async (sagaName: string, correlationKey: string, flags: Omit<SagaFlags, 'saga'>) => {
      const historyLimit = flags.history === undefined ? undefined : Number(flags.history);
      await cli.open();
      const instance = await cli.sagas.show(sagaName, correlationKey, { historyLimit });
      if (flags.json) return cli.printJson(instance);
      cli.print(describeInstance(instance));
    });
}

/** One instance for a reader: a field per line, then its state, pending timeouts and history. */
function describeInstance(instance: SagaInstanceDetail): string {
  const lines = [
    `saga            ${visibleText(instance.sagaName)}`,
    `correlation key ${visibleText(instance.correlationKey)}`,
    `status          ${instance.status}`,
    `version         ${instance.version}`,
    `started         ${instance.createdAt.toISOString()}`,
    `updated         ${instance.updatedAt.toISOString()}`,
    `completed       ${instance.completedAt?.toISOString() ?? '-'}`,
    '',
    `state (${instance.stateBytes} bytes${instance.stateTruncated ? `, cut: the first ${instance.state.length} characters` : ''})`,
    visibleText(instance.state) + (instance.stateTruncated ? '\n… (cut)' : ''),
    '',
    `pending timeouts (${instance.pendingTimeouts.length})`,
    instance.pendingTimeouts.length === 0
      ? '  none'
      : table(
          ['DUE', 'MESSAGE ID'],
          instance.pendingTimeouts.map((timeout) => [timeout.dueAt, timeout.messageId]),
        ),
    '',
    `history, newest first (${instance.history.length}${instance.historyMore ? ', older entries not shown: raise --history' : ''})`,
    table(
      ['HANDLED', 'VERSION', 'OUTCOME', 'TYPE', 'MESSAGE ID', 'STEP'],
      instance.history.map((entry) => [
        new Date(entry.handledAt).toISOString(),
        String(entry.version),
        entry.outcome,
        truncate(visibleText(entry.messageType), 40),
        truncate(visibleText(entry.messageId), 40),
        truncate(visibleText(entry.step), 60),
      ]),
    ),
  ];
  return lines.join('\n');
}
