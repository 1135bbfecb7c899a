import { createInterface } from 'node:readline/promises';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';

/**
 * Asks a question on stderr and reads one line of the answer from stdin. Refuses when stdin is not a terminal,
 * so a script never purges on a line it happened to pipe in: scripts pass `--yes`.
 */
export async function confirm(
  io: { stdin: NodeJS.ReadableStream & { isTTY?: boolean }; stderr: NodeJS.WritableStream },
  question: string,
): Promise<string> {
  if (!io.stdin.isTTY) {
    throw new InvalidDeadLetterQueryError(
      'not asking for confirmation without a terminal: add --yes (or try --dry-run first)',
    );
  }
  const prompt = createInterface({ input: io.stdin, output: io.stderr, terminal: true });
  try {
    return (await prompt.question(question)).trim();
  } finally {
    prompt.close();
  }
}
