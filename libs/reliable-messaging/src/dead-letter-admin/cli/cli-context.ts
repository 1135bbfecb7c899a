import { hostname, userInfo } from 'node:os';
import type { INestApplicationContext } from '@nestjs/common';
import { DeadLetterMonitor } from '../../dead-letter/dead-letter-monitor.service';
import { DeadLetterAudit } from '../dead-letter-audit.service';
import { DeadLetterOperations } from '../dead-letter-operations.service';

/** Where the command line reads and writes; the process's own streams by default. */
export interface DeadLetterCliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Who runs the commands, for the audit trail. Default: `<OS user>@<host>`. */
  actor?: string;
}

/** Exit codes: 0 done, 1 the operation failed (or left failures), 2 the command was wrong. */
export const CLI_EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** What every command works with: the app's dead-letter services, the streams, and the exit code to set. */
export interface CliContext {
  io: Required<DeadLetterCliIo>;
  operations: DeadLetterOperations;
  monitor: DeadLetterMonitor;
  audit: DeadLetterAudit;
  /** The exit code the last action chose; `runDeadLetterCli` resolves with it. */
  exit: { code: number };
  /** Writes a line to stdout. */
  print(text: string): void;
  /** Writes a value to stdout as indented JSON. */
  printJson(value: unknown): void;
}

/** The context of one program: the services from the app, the given streams or the process's own. */
export function createCliContext(app: INestApplicationContext, io: Partial<DeadLetterCliIo>): CliContext {
  const out: Required<DeadLetterCliIo> = {
    stdout: io.stdout ?? process.stdout,
    stderr: io.stderr ?? process.stderr,
    stdin: io.stdin ?? process.stdin,
    actor: io.actor ?? defaultActor(),
  };
  const print = (text: string): void => void out.stdout.write(`${text}\n`);
  return {
    io: out,
    operations: app.get(DeadLetterOperations),
    monitor: app.get(DeadLetterMonitor),
    audit: app.get(DeadLetterAudit),
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
