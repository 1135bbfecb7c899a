/** The largest outbox row id: the `id` column is a PostgreSQL `bigint`, a signed 64-bit integer. */
export const MAX_OUTBOX_ROW_ID = 9223372036854775807n;

/**
 * Whether `text` names an outbox row id: digits from 1 to {@link MAX_OUTBOX_ROW_ID}. Twenty digits, or nineteen
 * above the maximum, would make PostgreSQL refuse the whole query with `bigint out of range`.
 */
export function isOutboxRowId(text: string): boolean {
  if (!/^\d{1,19}$/.test(text)) return false;
  const id = BigInt(text);
  return id >= 1n && id <= MAX_OUTBOX_ROW_ID;
}
