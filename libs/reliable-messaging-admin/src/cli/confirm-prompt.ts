import { createInterface } from 'node:readline/promises';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';

/**
 * Refuses when stdin is not a terminal, so a script never purges on a line it happened to pipe in: scripts pass
 * `--yes`. Commands call it before the app boots, so the refusal connects to nothing.
 */
export function requireTerminal(stdin: { isTTY?: boolean }): void {
  if (!stdin.isTTY) {
    throw new InvalidDeadLetterQueryError(
      'not asking for confirmation without a terminal: add --yes (or try --dry-run first)',
    );
  }
}

/** Asks a question on stderr and reads one line of the answer from stdin, which must be a terminal. */
export async function askOnTerminal(
  io: { stdin: NodeJS.ReadableStream & { isTTY?: boolean }; stderr: NodeJS.WritableStream },
  question: string,
): Promise<string> {
  requireTerminal(io.stdin);
  const prompt = createInterface({ input: io.stdin, output: io.stderr, terminal: true });
  try {
    return await prompt.question(question);
  } finally {
    prompt.close();
  }
}
