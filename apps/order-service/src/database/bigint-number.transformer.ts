import type { ValueTransformer } from 'typeorm';

/**
 * Maps a PostgreSQL `bigint` (which the driver returns as a string) to a JavaScript number. Only for columns whose
 * values are bounded well below 2^53 by validation, such as amounts in cents.
 */
export const bigintNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};
