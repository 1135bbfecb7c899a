/**
 * The hand-written order service's own tables: the columns, keys, checks and indexes of the order app's
 * `orders`, `order_items`, `payments` and `order_history` (its migrations), under `hw_` names, so that both
 * services' inserts maintain the same indexes. Its inbox and outbox are `hw_inbox` and `hw_outbox`
 * (HAND_WRITTEN_TABLES), created beside these.
 */
export const ORDER_FLOW_TABLES: readonly string[] = [
  `CREATE TABLE hw_orders (
     id uuid PRIMARY KEY,
     customer_id varchar(100) NOT NULL,
     status varchar(16) NOT NULL CHECK (status IN ('placed', 'paid', 'shipped')),
     total_cents bigint NOT NULL CHECK (total_cents >= 0),
     created_at timestamptz NOT NULL DEFAULT now(),
     payment_id uuid,
     paid_at timestamptz,
     shipped_at timestamptz,
     receipt_id varchar(100),
     receipt_sent_at timestamptz)`,
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
  `CREATE TABLE hw_order_history (
     position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     recorder text NOT NULL CHECK (recorder IN ('history', 'activity')),
     order_id uuid NOT NULL,
     status text NOT NULL,
     sequence integer NOT NULL,
     handled_at timestamptz NOT NULL DEFAULT now())`,
  'CREATE INDEX hw_order_history_order_idx ON hw_order_history (order_id, position)',
];

/** Empties every table the hand-written order service writes, between benchmark runs. */
export const ORDER_FLOW_TRUNCATE =
  'TRUNCATE hw_orders, hw_order_items, hw_payments, hw_order_history, hw_inbox, hw_outbox';
