/**
 * The hand-written baseline's own inbox and outbox tables: the same columns, keys, partial indexes and vacuum
 * settings as the module's `rm_inbox` and `rm_outbox` (their migrations), under other names, so both run in one
 * database and every insert maintains the same indexes.
 */
export const HAND_WRITTEN_TABLES: readonly string[] = [
  `CREATE TABLE hw_inbox (
     consumer text NOT NULL,
     idempotency_key text NOT NULL,
     message_id text NOT NULL,
     message_type text NOT NULL,
     processed_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (consumer, idempotency_key))`,
  'CREATE INDEX hw_inbox_processed_at_idx ON hw_inbox (processed_at)',
  `CREATE TABLE hw_outbox (
     id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     message_id uuid NOT NULL,
     exchange text NOT NULL,
     routing_key text NOT NULL,
     properties jsonb NOT NULL,
     body bytea NOT NULL,
     ordering_key text,
     status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'published', 'parked')),
     attempts integer NOT NULL DEFAULT 0,
     last_error text,
     created_at timestamptz NOT NULL DEFAULT now(),
     available_at timestamptz NOT NULL DEFAULT now(),
     published_at timestamptz,
     parked_at timestamptz)`,
  `CREATE INDEX hw_outbox_pending_idx ON hw_outbox (id) WHERE status = 'pending'`,
  `CREATE INDEX hw_outbox_pending_key_idx ON hw_outbox (ordering_key, id) WHERE status = 'pending' AND ordering_key IS NOT NULL`,
  `CREATE INDEX hw_outbox_retrying_idx ON hw_outbox (ordering_key, id) WHERE status = 'pending' AND attempts > 0 AND ordering_key IS NOT NULL`,
  `CREATE INDEX hw_outbox_parked_idx ON hw_outbox (id) WHERE status = 'parked'`,
  `CREATE INDEX hw_outbox_published_at_idx ON hw_outbox (published_at) WHERE status = 'published'`,
  'ALTER TABLE hw_outbox SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)',
];

/** Inserts one outbox row; the relay publishes it after the transaction that wrote it commits. */
export const OUTBOX_INSERT =
  'INSERT INTO hw_outbox (message_id, exchange, routing_key, properties, body, ordering_key) ' +
  'VALUES ($1, $2, $3, $4, $5, $6)';

/**
 * Inserts several outbox rows in one statement, in array order (so in id order: the relay sends an ordering key's
 * rows in that order): message ids, exchanges, routing keys, properties, bodies and ordering keys, one array each.
 */
export const OUTBOX_INSERT_MANY =
  'INSERT INTO hw_outbox (message_id, exchange, routing_key, properties, body, ordering_key) ' +
  'SELECT m, e, r, p, b, k FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::bytea[], $6::text[]) ' +
  // NOTE: SQL promises no row order without ORDER BY; the ordinality makes the ids follow the arrays.
  'WITH ORDINALITY AS rows (m, e, r, p, b, k, n) ORDER BY n';
