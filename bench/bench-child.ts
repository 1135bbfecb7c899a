import { createInterface } from 'node:readline';

/**
 * What the scale suite's child processes (many-consumers-app.ts, dead-letters-app.ts) share: they report events
 * as lines of JSON on stdout, and run until the suite writes `stop` on stdin.
 */

/** One line of JSON on stdout, which the suite that started this process reads. */
export function report(event: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

/** Resolves once the suite writes `stop` on stdin. */
export async function stopRequested(): Promise<void> {
  const stdin = createInterface({ input: process.stdin });
  await new Promise<void>((resolve) => stdin.on('line', (line) => line === 'stop' && resolve()));
  stdin.close();
}

/** Runs the process's `main`, then exits: 0 once it returned, 1 with its error on stderr. */
export function runChild(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}
