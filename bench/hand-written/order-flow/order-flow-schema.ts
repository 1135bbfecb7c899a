/**
 * The hand-written order service's own tables: the columns, keys, checks and indexes of the order app's
 * `orders`, `order_items`, `payments`, `payment_voids` and `order_history` (its migrations) and of the module's
 * `rm_saga`, `rm_saga_history` and `rm_scheduled` (the order saga's instances, their history and its timeouts),
 * under `hw_` names, so that both services' inserts maintain the same indexes. Its inbox and outbox are
 * `hw_inbox` and `hw_outbox` (HAND_WRITTEN_TABLES), created beside these.
 */
export const ORDER_FLOW_TABLES: readonly string[] = [
  `CREATE TABLE hw_orders (
     id uuid PRIMARY KEY,
     customer_id varchar(100) NOT NULL,
     status varchar(16) NOT NULL CHECK (status IN ('placed', 'paid', 'shipped', 'cancelled')),
     total_cents bigint NOT NULL CHECK (total_cents >= 0),
     created_at timestamptz NOT NULL DEFAULT now(),
     payment_id uuid,
     paid_at timestamptz,
     shipped_at timestamptz,
     receipt_id varchar(100),
     receipt_sent_at timestamptz,
     cancelled_at timestamptz,
     cancel_reason varchar(32))`,
  `CREATE TABLE hw_order_items (
     order_id uuid NOT NULL REFERENCES hw_orders (id) ON DELETE CASCADE,
     line smallint NOT NULL CHECK (line >= 1),
     sku varchar(64) NOT NULL,
     quantity integer NOT NULL CHECK (quantity >= 1),
     unit_price_cents bigint NOT NULL CHECK (unit_price_cents >= 0),
     PRIMARY KEY (order_id, line))`,
  // No unique key on order_id, as in the app: a double charge must show as a second row, not be refused.
  `CREATE TABLE hw_payments (
     id uuid PRIMARY KEY,
     order_id uuid NOT NULL REFERENCES hw_orders (id) ON DELETE CASCADE,
     amount_cents bigint NOT NULL CHECK (amount_cents >= 0),
     message_id varchar(200),
     charged_at timestamptz NOT NULL DEFAULT now())`,
  'CREATE INDEX hw_payments_order_id_idx ON hw_payments (order_id)',
  // A cancelled order's payment request, voided: a request handled after it charges nothing.
  `CREATE TABLE hw_payment_voids (
     order_id uuid PRIMARY KEY REFERENCES hw_orders (id) ON DELETE CASCADE,
     voided_at timestamptz NOT NULL DEFAULT now())`,
  `CREATE TABLE hw_order_history (
     position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     recorder text NOT NULL CHECK (recorder IN ('history', 'activity')),
     order_id uuid NOT NULL,
     status text NOT NULL,
     sequence integer NOT NULL,
     handled_at timestamptz NOT NULL DEFAULT now())`,
  'CREATE INDEX hw_order_history_order_idx ON hw_order_history (order_id, position)',
  // One row per saga instance (one per order), its state JSON and a version each step's update checks.
  `CREATE TABLE hw_saga (
     id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     saga text NOT NULL,
     correlation_key text NOT NULL,
     status text NOT NULL CHECK (status IN ('active', 'completed')),
     state jsonb NOT NULL,
     version integer NOT NULL CHECK (version > 0),
     timeouts jsonb NOT NULL DEFAULT '[]',
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now(),
     completed_at timestamptz,
     UNIQUE (saga, correlation_key))`,
  'CREATE INDEX hw_saga_completed_at_idx ON hw_saga (completed_at) WHERE completed_at IS NOT NULL',
  // One row per message a step handled.
  `CREATE TABLE hw_saga_history (
     id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     saga_id bigint NOT NULL REFERENCES hw_saga (id) ON DELETE CASCADE,
     version integer NOT NULL,
     message_id text NOT NULL,
     message_type text NOT NULL,
     step text NOT NULL,
     outcome text NOT NULL,
     handled_at timestamptz NOT NULL DEFAULT now())`,
  'CREATE INDEX hw_saga_history_saga_idx ON hw_saga_history (saga_id, id)',
  // Messages due later (the saga's payment timeouts): written in a step's transaction, deleted when cancelled.
  `CREATE TABLE hw_scheduled (
     id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     message_id uuid NOT NULL,
     idempotency_key text NOT NULL,
     exchange text NOT NULL,
     routing_key text NOT NULL,
     properties jsonb NOT NULL,
     body bytea NOT NULL,
     ordering_key text,
     deliver_at timestamptz NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now())`,
  'CREATE INDEX hw_scheduled_deliver_at_idx ON hw_scheduled (deliver_at, id)',
  'CREATE INDEX hw_scheduled_message_id_idx ON hw_scheduled (message_id)',
  'CREATE INDEX hw_scheduled_idempotency_key_idx ON hw_scheduled (idempotency_key)',
  'ALTER TABLE hw_scheduled SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)',
];

/** Empties every table the hand-written order service writes, between benchmark runs. */
export const ORDER_FLOW_TRUNCATE =
  'TRUNCATE hw_orders, hw_order_items, hw_payments, hw_payment_voids, hw_order_history, hw_saga, hw_saga_history, ' +
  'hw_scheduled, hw_inbox, hw_outbox';
