import { scrubCredentials } from './scrub-credentials';

/** The message of anything thrown, for logs and reports, without any credentials it quotes. */
export function errorMessage(error: unknown): string {
  return scrubCredentials(error instanceof Error ? error.message : String(error));
}

/** The stack of an error (its first line repeats the message), without any credentials it quotes. */
export function errorStack(error: Error): string {
  return scrubCredentials(error.stack ?? '');
}
