import { ConfigurationError } from '../errors/configuration.error';

/**
 * How a consumer orders its messages, set with `@Consume({ ordering })`. See docs/ordering.md for the cost of
 * each choice.
 *
 * - `'none'` (the default): handled in parallel, in no particular order; handlers must be order-independent.
 * - `'queue'`: one message at a time across every replica, in queue order (a single-active-consumer queue).
 * - `{ by: 'key', partitions: N }`: messages with the same ordering key one at a time in publish order, other
 *   keys in parallel over N single-active-consumer partition queues.
 */
export type OrderingOption = 'none' | 'queue' | { by: 'key'; partitions: number };

/** The most partitions a key-ordered consumer may have (each is a queue and a dead-letter queue). */
export const MAX_PARTITIONS = 256;

/** `@Consume({ ordering })` read and checked, before a key-ordered consumer is split into its partitions. */
export type ResolvedOrderingOption =
  { mode: 'none' } | { mode: 'queue' } | { mode: 'key'; partitions: number };

/** Reads `@Consume({ ordering })`, failing with a ConfigurationError that says what is accepted. */
export function resolveOrderingOption(value: unknown, where: string): ResolvedOrderingOption {
  if (value === undefined || value === 'none') return { mode: 'none' };
  if (value === 'queue') return { mode: 'queue' };
  if (typeof value === 'object' && value !== null && (value as { by?: unknown }).by === 'key') {
    const partitions = (value as { partitions?: unknown }).partitions;
    if (
      typeof partitions !== 'number' ||
      !Number.isInteger(partitions) ||
      partitions < 1 ||
      partitions > MAX_PARTITIONS
    ) {
      throw new ConfigurationError(
        `${where}: ordering { by: 'key' } needs 'partitions', an integer from 1 to ${MAX_PARTITIONS}, got ${String(partitions)}; ` +
          `e.g. ordering: { by: 'key', partitions: 8 } (docs/ordering.md, "Choosing the number of partitions")`,
      );
    }
    return { mode: 'key', partitions };
  }
  throw new ConfigurationError(
    `${where}: 'ordering' must be 'none', 'queue' or { by: 'key', partitions: N }, got ${describe(value)}`,
  );
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
