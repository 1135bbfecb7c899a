import type { Pool } from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { isCurrencyAmount, toCents } from '../../../apps/order-service/src/orders/money.util';
import { inTransaction } from '../in-transaction';
import { orderPlaced, statusChanged, writeToOutbox } from './order-events';

/** The longest customer id, SKU and note, in code points: the app's columns and its DTO's limits. */
const MAX_CUSTOMER_ID = 100;
const MAX_SKU = 64;
const MAX_NOTE = 32_768;
/** Lines an order may have, and the largest quantity of one. */
const MAX_LINES = 100;
const MAX_QUANTITY = 10_000;

/** A checked `POST /orders` body. Prices are integer cents. */
export interface PlaceOrder {
  customerId: string;
  items: Array<{ sku: string; quantity: number; unitPriceCents: number }>;
  note?: string;
}

/** The order as `POST /orders` answers it: the app's OrderView of a new order. */
export interface PlacedOrderView {
  id: string;
  customerId: string;
  status: 'placed';
  totalCents: number;
  items: PlaceOrder['items'];
  receiptSent: false;
  createdAt: string;
  paidAt: null;
  shippedAt: null;
}

/**
 * Checks a parsed `POST /orders` body by the app's rules (PlaceOrderDto): the order's problems, each naming its
 * field, or the order. Unknown properties are refused, strings are counted in code points as PostgreSQL counts a
 * varchar, and a NUL character, which PostgreSQL cannot store, is refused rather than failing the insert.
 */
export function readPlaceOrder(body: unknown): { order: PlaceOrder } | { problems: string[] } {
  const problems: string[] = [];
  if (!isObject(body)) return { problems: ['body must be a JSON object'] };
  unknownKeys(body, ['customerId', 'items', 'note'], '', problems);
  text(body.customerId, 'customerId', MAX_CUSTOMER_ID, problems);
  if (body.note !== undefined && body.note !== null) text(body.note, 'note', MAX_NOTE, problems, true);
  const items: PlaceOrder['items'] = [];
  if (!Array.isArray(body.items) || body.items.length < 1 || body.items.length > MAX_LINES) {
    problems.push(`items must be an array of 1 to ${MAX_LINES} lines`);
  } else {
    for (const [index, item] of (body.items as unknown[]).entries()) {
      const at = `items.${index}`;
      if (!isObject(item)) {
        problems.push(`${at} must be an object`);
        continue;
      }
      unknownKeys(item, ['sku', 'quantity', 'unitPrice'], `${at}.`, problems);
      text(item.sku, `${at}.sku`, MAX_SKU, problems);
      const { quantity, unitPrice } = item;
      if (!Number.isInteger(quantity) || (quantity as number) < 1 || (quantity as number) > MAX_QUANTITY) {
        problems.push(`${at}.quantity must be an integer from 1 to ${MAX_QUANTITY}`);
      }
      if (!isCurrencyAmount(unitPrice)) {
        problems.push(`${at}.unitPrice must be a number from 0 to 1000000 with at most 2 decimal places`);
      }
      items.push({
        sku: item.sku as string,
        quantity: quantity as number,
        unitPriceCents: isCurrencyAmount(unitPrice) ? toCents(unitPrice as number) : 0,
      });
    }
  }
  if (problems.length > 0) return { problems };
  const note = typeof body.note === 'string' ? body.note : undefined;
  return { order: { customerId: body.customerId as string, items, ...(note === undefined ? {} : { note }) } };
}

/**
 * Stores the order, its lines and its two events (OrderPlaced and its first OrderStatusChanged) in one
 * transaction: there is never an order without its events nor an event without its order.
 */
export async function placeOrder(
  pool: Pool,
  order: PlaceOrder,
  appId: string,
  exchange: string,
): Promise<PlacedOrderView> {
  const id = uuidv7();
  const createdAt = new Date();
  const totalCents = order.items.reduce((sum, item) => sum + item.quantity * item.unitPriceCents, 0);
  const events = [
    orderPlaced(
      {
        orderId: id,
        customerId: order.customerId,
        totalCents,
        itemCount: order.items.length,
        placedAt: createdAt,
        note: order.note,
      },
      appId,
    ),
    statusChanged(id, 'placed', createdAt, undefined, appId),
  ];
  await inTransaction(pool, async (client) => {
    await client.query({
      name: 'hw_order_insert',
      text: `INSERT INTO hw_orders (id, customer_id, status, total_cents, created_at) VALUES ($1, $2, 'placed', $3, $4)`,
      values: [id, order.customerId, totalCents, createdAt],
    });
    await client.query({
      name: 'hw_order_items_insert',
      text:
        'INSERT INTO hw_order_items (order_id, line, sku, quantity, unit_price_cents) ' +
        'SELECT $1, line, sku, quantity, price FROM unnest($2::smallint[], $3::text[], $4::int[], $5::bigint[]) ' +
        'AS lines (line, sku, quantity, price)',
      values: [
        id,
        order.items.map((_, index) => index + 1),
        order.items.map((item) => item.sku),
        order.items.map((item) => item.quantity),
        order.items.map((item) => item.unitPriceCents),
      ],
    });
    await writeToOutbox(client, exchange, events);
  });
  return {
    id,
    customerId: order.customerId,
    status: 'placed',
    totalCents,
    items: order.items,
    receiptSent: false,
    createdAt: createdAt.toISOString(),
    paidAt: null,
    shippedAt: null,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unknownKeys(value: Record<string, unknown>, known: string[], at: string, problems: string[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) problems.push(`${at}${key.slice(0, 64)} should not exist`);
  }
}

/**
 * A string of 1 (0 when `mayBeEmpty`) to `max` code points without a NUL; else a problem for `field`. A string has
 * at least as many UTF-16 code units as code points: only a long one needs counting.
 */
function text(value: unknown, field: string, max: number, problems: string[], mayBeEmpty = false): void {
  if (typeof value !== 'string' || (!mayBeEmpty && value.length === 0)) {
    problems.push(`${field} must be a ${mayBeEmpty ? '' : 'non-empty '}string`);
  } else if (value.includes('\u0000')) {
    problems.push(`${field} must not contain a NUL character`);
  } else if (value.length > max && [...value].length > max) {
    problems.push(`${field} must be at most ${max} characters long`);
  }
}
