import { hostname, userInfo } from 'node:os';
import type { INestApplicationContext } from '@nestjs/common';
import { DeadLetterMonitor } from 'nestjs-reliable-messaging/operations';
import { DeadLetterAudit } from '../audit/dead-letter-audit.service';
import { DeadLetterOperations } from '../dead-letter/dead-letter-operations.service';
import { OutboxOperations } from '../outbox/outbox-operations.service';
import { SagaOperations } from '../saga/saga-operations.service';
import { ScheduledOperations } from '../scheduled/scheduled-operations.service';
import { askOnTerminal, requireTerminal } from './confirm-prompt';

/** Where the command line reads and writes; the process's own streams by default. */
export interface DeadLetterCliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Who runs the commands, for the audit trail. Default: `<OS user>@<host>`. */
  actor?: string;
  /**
   * Asks the operator to confirm a purge or discard and resolves with the answer. Default: asks on stderr and
   * reads a line from stdin, refused (before the app boots) when stdin is not a terminal.
   */
  confirm?: (question: string) => Promise<string>;
}

/** Exit codes: 0 done, 1 the operation failed (or left failures), 2 the command was wrong. */
export const CLI_EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/**
 * The app the command line runs on: a booted app context, or a function that boots one. A function is called
 * only once a command's arguments checked out and it is about to run, so `--help` and a wrong command connect to
 * nothing; the command line then closes the app it booted.
 */
export type CliApp = INestApplicationContext | (() => Promise<INestApplicationContext>);

/** What every command works with: the app's dead-letter, outbox, scheduled-message and saga services, the streams, and the exit code to set. */
export interface CliContext {
  io: Required<Omit<DeadLetterCliIo, 'confirm'>>;
  /** The app's services; usable once `open` resolved (each action opens it once its arguments checked out). */
  readonly operations: DeadLetterOperations;
  readonly outbox: OutboxOperations;
  readonly scheduled: ScheduledOperations;
  readonly sagas: SagaOperations;
  readonly monitor: DeadLetterMonitor;
  readonly audit: DeadLetterAudit;
  /** Boots the app when it was given as a function; a no-op after the first call. */
  open(): Promise<void>;
  /** Refuses, before anything boots, a confirmation that could not be asked (no terminal and no `confirm` hook). */
  requireConfirmable(): void;
  /** Asks the operator `question` and resolves with the trimmed answer. */
  confirm(question: string): Promise<string>;
  /** Closes the app if `open` booted it. */
  close(): Promise<void>;
  /** The exit code the last action chose; `runDeadLetterCli` resolves with it. */
  exit: { code: number };
  /** Writes a line to stdout. */
  print(text: string): void;
  /** Writes a value to stdout as indented JSON. */
  printJson(value: unknown): void;
}

/** The context of one program: the services from the app, the given streams or the process's own. */
export function createCliContext(source: CliApp, io: Partial<DeadLetterCliIo>): CliContext {
  const out: Required<Omit<DeadLetterCliIo, 'confirm'>> = {
    stdout: io.stdout ?? process.stdout,
    stderr: io.stderr ?? process.stderr,
    stdin: io.stdin ?? process.stdin,
    actor: io.actor ?? defaultActor(),
  };
  const print = (text: string): void => void out.stdout.write(`${text}\n`);
  let app: INestApplicationContext | undefined = typeof source === 'function' ? undefined : source;
  let booted = false;
  const get = <T>(type: abstract new (...args: never[]) => T): T => {
    if (!app) throw new Error('the app context is not open yet');
    return app.get(type);
  };
  return {
    io: out,
    get operations() {
      return get(DeadLetterOperations);
    },
    get outbox() {
      return get(OutboxOperations);
    },
    get scheduled() {
      return get(ScheduledOperations);
    },
    get sagas() {
      return get(SagaOperations);
    },
    get monitor() {
      return get(DeadLetterMonitor);
    },
    get audit() {
      return get(DeadLetterAudit);
    },
    async open() {
      if (app || typeof source !== 'function') return;
      app = await source();
      booted = true;
    },
    async close() {
      if (booted) await app?.close();
    },
    requireConfirmable() {
      if (!io.confirm) requireTerminal(out.stdin);
    },
    async confirm(question) {
      return (await (io.confirm ? io.confirm(question) : askOnTerminal(out, question))).trim();
    },
    exit: { code: CLI_EXIT.ok },
    print,
    printJson: (value: unknown): void => void print(JSON.stringify(value, null, 2)),
  };
}

function defaultActor(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
  return `${user}@${hostname()}`;
}
