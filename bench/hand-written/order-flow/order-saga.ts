import type { PoolClient } from 'pg';
import { UnusableMessageError, type DecodedMessage, type TransactionalWork } from '../transactional-consumer';
import {
  orderPaid,
  paymentTimedOut,
  requestPayment,
  statusChanged,
  writeToOutbox,
  type OrderEvent,
} from './order-events';
import { orderIdOf, OrderNotReadyError, amountOf, type OrderFlowContext } from './order-consumers';

/** The saga's name, as the app's: its instances are stored under it, one per order, keyed by the order id. */
const ORDER_SAGA = 'order-fulfilment';

/** What the saga remembers of an order between its messages: the app's OrderSagaState. */
interface OrderSagaState {
  stage: 'awaiting-payment' | 'shipping' | 'shipped';
  customerId: string;
  amountCents: number;
  paymentId?: string;
}

/** A timeout an instance waits for: the scheduled message's id, and when it is due (ISO 8601). */
interface SagaTimeout {
  messageId: string;
  dueAt: string;
}

/** An order's instance as a step reads it. */
interface SagaRow {
  id: string;
  status: 'active' | 'completed';
  state: OrderSagaState;
  version: number;
  timeouts: SagaTimeout[];
}

/** Another step changed the instance between this step's read and its write: rolled back and retried. */
class SagaConflictError extends Error {
  override readonly name = 'SagaConflictError';
}

const LOAD =
  'SELECT id::text AS id, status, state, version, timeouts FROM hw_saga WHERE saga = $1 AND correlation_key = $2';

const HISTORY_INSERT =
  'INSERT INTO hw_saga_history (saga_id, version, message_id, message_type, step, outcome) ' +
  'SELECT id, version, $5, $6, $7, $8 FROM written';

// ON CONFLICT DO NOTHING: a copy that raced this one to start the instance inserts nothing, and the transaction
// stays usable for its rollback.
const START =
  'WITH written AS (INSERT INTO hw_saga (saga, correlation_key, status, state, version, timeouts) ' +
  `VALUES ($1, $2, $4, $3::jsonb, 1, $9::jsonb) ON CONFLICT (saga, correlation_key) DO NOTHING RETURNING id, version) ` +
  HISTORY_INSERT;

// Optimistic: the update matches only the version the step read. Under READ COMMITTED a step that meets a row
// another transaction changed waits for it, then finds the version moved on and updates nothing.
const CONTINUE =
  'WITH written AS (UPDATE hw_saga SET state = $3::jsonb, status = $4, version = version + 1, updated_at = now(), ' +
  `completed_at = CASE WHEN $4 = 'completed' THEN now() END, timeouts = $9::jsonb ` +
  'WHERE id = $1::bigint AND version = $2::integer RETURNING id, version) ' +
  HISTORY_INSERT;

const SCHEDULE =
  'INSERT INTO hw_scheduled (message_id, idempotency_key, exchange, routing_key, properties, body, ordering_key, deliver_at) ' +
  'VALUES ($1, $2, $3, $4, $5, $6, $7, $8)';

const ORDER_EXISTS = 'SELECT 1 FROM hw_orders WHERE id = $1';

const MARK_PAID =
  `UPDATE hw_orders SET status = 'paid', payment_id = $2, paid_at = now() WHERE id = $1 AND status = 'placed' ` +
  'RETURNING paid_at';

/** What one step leaves: the instance's new state, its timeouts, whether it completed, and the step's name. */
interface StepWrite {
  step: string;
  state: OrderSagaState;
  timeouts: SagaTimeout[];
  completed?: boolean;
}

async function loadSaga(client: PoolClient, orderId: string): Promise<SagaRow | undefined> {
  const { rows } = await client.query<SagaRow>({
    name: 'hw_saga_load',
    text: LOAD,
    values: [ORDER_SAGA, orderId],
  });
  return rows[0];
}

/**
 * Writes the step's outcome with its history row, in one statement: inserts the instance (`found` undefined) or
 * updates it at the version the step read. Nothing written means another step got there first.
 */
async function writeSaga(
  client: PoolClient,
  orderId: string,
  found: SagaRow | undefined,
  write: StepWrite,
  message: DecodedMessage,
): Promise<void> {
  const status = write.completed ? 'completed' : 'active';
  const outcome = write.completed ? 'completed' : found ? 'continued' : 'started';
  const history = [message.messageId, message.type, write.step, outcome, JSON.stringify(write.timeouts)];
  const state = JSON.stringify(write.state);
  const written = found
    ? await client.query({
        name: 'hw_saga_continue',
        text: CONTINUE,
        values: [found.id, found.version, state, status, ...history],
      })
    : await client.query({
        name: 'hw_saga_start',
        text: START,
        values: [ORDER_SAGA, orderId, state, status, ...history],
      });
  if (written.rowCount !== 1) {
    throw new SagaConflictError(`saga ${ORDER_SAGA} of order ${orderId} changed under step ${write.step}`);
  }
}

/** Writes `event` to be sent at `deliverAt`, in the client's transaction. */
async function schedule(
  client: PoolClient,
  exchange: string,
  event: OrderEvent,
  deliverAt: Date,
): Promise<void> {
  await client.query({
    name: 'hw_scheduled_insert',
    text: SCHEDULE,
    values: [
      event.properties.messageId,
      event.idempotencyKey,
      exchange,
      event.routingKey,
      JSON.stringify(event.properties),
      event.body,
      event.orderingKey,
      deliverAt,
    ],
  });
}

/**
 * The saga's step on OrderPlaced, in the message's transaction with its inbox row: starts the order's instance
 * once the order is visible, sends RequestPayment to the gateway and schedules its PaymentTimedOut. An instance
 * already started (a copy that got past the inbox) is left as it is.
 */
export function sagaPlacedWork(context: OrderFlowContext): TransactionalWork {
  return async (client, message) => {
    const orderId = orderIdOf(message);
    const { customerId } = message.body;
    const amountCents = amountOf(message, 'totalCents');
    if (typeof customerId !== 'string')
      throw new UnusableMessageError(`message ${message.messageId}: no customer`);
    if (await loadSaga(client, orderId)) return;
    const order = await client.query({ name: 'hw_saga_order_exists', text: ORDER_EXISTS, values: [orderId] });
    if (order.rowCount === 0) throw new OrderNotReadyError(`order ${orderId} not found`);
    await writeToOutbox(client, context.exchange, [
      requestPayment({ orderId, customerId, amountCents }, message, context.appId),
    ]);
    const timeout = paymentTimedOut(orderId, message, context.appId);
    const dueAt = new Date(Date.now() + context.paymentTimeoutMs);
    await schedule(client, context.exchange, timeout, dueAt);
    await writeSaga(
      client,
      orderId,
      undefined,
      {
        step: 'onPlaced',
        state: { stage: 'awaiting-payment', customerId, amountCents },
        timeouts: [{ messageId: timeout.properties.messageId, dueAt: dueAt.toISOString() }],
      },
      message,
    );
  };
}

/**
 * The saga's step on PaymentCaptured, in the message's transaction with its inbox row: marks the order paid and
 * sends OrderPaid (to shipping) and the `paid` status change. An instance past awaiting the payment is left as
 * it is: a late or repeated message never moves an order back.
 */
export function sagaPaymentCapturedWork(context: OrderFlowContext): TransactionalWork {
  return async (client, message) => {
    const orderId = orderIdOf(message);
    const { paymentId } = message.body;
    if (typeof paymentId !== 'string')
      throw new UnusableMessageError(`message ${message.messageId}: no payment`);
    const amountCents = amountOf(message, 'amountCents');
    const saga = await loadSaga(client, orderId);
    if (!saga) throw new OrderNotReadyError(`order ${orderId} has no saga yet`);
    if (saga.status === 'completed' || saga.state.stage !== 'awaiting-payment') return;
    const { rows } = await client.query<{ paid_at: Date }>({
      name: 'hw_saga_mark_paid',
      text: MARK_PAID,
      values: [orderId, paymentId],
    });
    const paidAt = rows[0]?.paid_at;
    if (!paidAt) throw new OrderNotReadyError(`order ${orderId} is not placed`);
    await writeToOutbox(client, context.exchange, [
      orderPaid({ orderId, paymentId, amountCents, paidAt }, message, context.appId),
      statusChanged(orderId, 'paid', paidAt, message, context.appId),
    ]);
    await writeSaga(
      client,
      orderId,
      saga,
      {
        step: 'onPaymentCaptured',
        state: { ...saga.state, stage: 'shipping', paymentId },
        timeouts: saga.timeouts,
      },
      message,
    );
  };
}

/**
 * The saga's step on OrderShipped, in the message's transaction with its inbox row: completes the instance and
 * deletes the timeouts it still waits for (the payment's, which no longer means anything).
 */
export function sagaShippedWork(): TransactionalWork {
  return async (client, message) => {
    const orderId = orderIdOf(message);
    const saga = await loadSaga(client, orderId);
    if (!saga) throw new OrderNotReadyError(`order ${orderId} has no saga yet`);
    if (saga.status === 'completed' || saga.state.stage !== 'shipping') return;
    for (const timeout of saga.timeouts) {
      await client.query({
        name: 'hw_scheduled_cancel',
        text: 'DELETE FROM hw_scheduled WHERE message_id = $1',
        values: [timeout.messageId],
      });
    }
    await writeSaga(
      client,
      orderId,
      saga,
      { step: 'onShipped', state: { ...saga.state, stage: 'shipped' }, timeouts: [], completed: true },
      message,
    );
  };
}
