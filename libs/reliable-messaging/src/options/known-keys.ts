import { ConfigurationError } from '../errors/configuration.error';
import { closestMatch } from './closest-match';

/**
 * Every key of an options type, listed once: the compiler refuses a list that misses a key or names one the type
 * lacks, so the startup check below cannot drift from the type.
 */
export function optionKeys<T extends object>(keys: {
  readonly [K in keyof Required<T>]: true;
}): readonly string[] {
  return Object.freeze(Object.keys(keys));
}

/**
 * Throws a ConfigurationError for the first key of `value` that is not one of `known`, naming it and the known
 * key nearest to it: "ReliableMessagingModule: unknown option `defaultConcurency`; did you mean
 * `defaultConcurrency`?". `path` is where `value` sits (`outbox.`, `retry.`), written before both keys.
 * A key whose value is `undefined` is checked too: a misspelt key is wrong whatever it holds.
 */
export function assertKnownKeys(value: object, known: readonly string[], where: string, path = ''): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const match = closestMatch(key, known);
    const hint = match
      ? `did you mean \`${path}${match}\`?`
      : `the options here are ${known.map((k) => `\`${path}${k}\``).join(', ')}`;
    throw new ConfigurationError(`${where}: unknown option \`${path}${key}\`; ${hint}`);
  }
}
