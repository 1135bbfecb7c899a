import { Injectable } from '@nestjs/common';
import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { MessagePublisher, SagaInstances, type SagaInstanceView } from 'nestjs-reliable-messaging';
import { ORDER_SAGA } from '../fulfilment/order-saga';
import { isUUID } from 'class-validator';
import { v7 as uuidv7 } from 'uuid';
import { OrderStatusChanged } from '../messages/order-status-changed.message';
import { OrderPlaced } from '../messages/order-placed.message';
import type { PlaceOrderDto } from './dto/place-order.dto';
import { toCents } from './money.util';
import { Order } from './order.entity';
import type { OrderStats } from './order-view';

const INSERT_ORDER =
  'WITH placed AS (INSERT INTO orders (id, customer_id, status, total_cents, created_at) ' +
  `VALUES ($1, $2, 'placed', $3, $4) RETURNING id) ` +
  'INSERT INTO order_items (order_id, line, sku, quantity, unit_price_cents) ' +
  'SELECT placed.id, item.line, item.sku, item.quantity, item.price FROM placed, ' +
  'unnest($5::smallint[], $6::text[], $7::int[], $8::bigint[]) AS item (line, sku, quantity, price)';

/** The latest saga steps `GET /orders/:id` shows: an order's flow takes six at most. */
const SAGA_HISTORY_SHOWN = 20;

/** Places and reads orders. */
@Injectable()
export class OrdersService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly publisher: MessagePublisher,
    private readonly sagas: SagaInstances,
  ) {}

  /**
   * Stores the order and emits OrderPlaced in one transaction: with the module's outbox configured the message
   * is written beside the order and relayed after the commit, so there is never an order without its event
   * nor an event without its order.
   */
  @Transactional()
  async placeOrder(dto: PlaceOrderDto): Promise<Order> {
    const id = uuidv7();
    const items = dto.items.map((item, index) => ({
      orderId: id,
      line: index + 1,
      sku: item.sku,
      quantity: item.quantity,
      unitPriceCents: toCents(item.unitPrice),
    }));
    const orders = this.txHost.tx.getRepository(Order);
    const order = orders.create({
      id,
      customerId: dto.customerId,
      status: 'placed',
      totalCents: items.reduce((sum, item) => sum + item.quantity * item.unitPriceCents, 0),
      items,
      createdAt: new Date(),
      paymentId: null,
      paidAt: null,
      shippedAt: null,
      receiptId: null,
      receiptSentAt: null,
      cancelledAt: null,
      cancelReason: null,
    });
    // The order and its lines in one statement, rather than save(), which reads before it writes.
    await this.txHost.tx.query(INSERT_ORDER, [
      order.id,
      order.customerId,
      order.totalCents,
      order.createdAt,
      items.map((item) => item.line),
      items.map((item) => item.sku),
      items.map((item) => item.quantity),
      items.map((item) => item.unitPriceCents),
    ]);
    await this.publisher.publishAll([
      OrderPlaced.of({
        orderId: order.id,
        customerId: order.customerId,
        totalCents: order.totalCents,
        itemCount: items.length,
        placedAt: order.createdAt.toISOString(),
        note: dto.note,
      }),
      OrderStatusChanged.of(order.id, 'placed', order.createdAt),
    ]);
    return order;
  }

  /**
   * The order with its lines and its saga instance, or null when there is no order with that id. Both are read in
   * one snapshot: a saga step changes the order and the instance in one commit, and two snapshots could show one
   * side of it (a completed instance beside a still-placed order).
   */
  async findById(id: string): Promise<{ order: Order; saga: SagaInstanceView | undefined } | null> {
    return isUUID(id) ? this.readOrder(id) : null;
  }

  @Transactional<TransactionalAdapterTypeOrm>({ isolationLevel: 'REPEATABLE READ' })
  private async readOrder(id: string): Promise<{ order: Order; saga: SagaInstanceView | undefined } | null> {
    const order = await this.txHost.tx.getRepository(Order).findOne({
      where: { id },
      relations: { items: true },
      order: { items: { line: 'ASC' } },
    });
    if (!order) return null;
    const saga = await this.sagas.find(ORDER_SAGA, id, {
      historyLimit: SAGA_HISTORY_SHOWN,
      manager: this.txHost.tx,
    });
    return { order, saga };
  }

  /** Counts of every order by status, and of receipts sent. */
  async stats(): Promise<OrderStats> {
    const row = await this.txHost.tx
      .getRepository(Order)
      .createQueryBuilder('o')
      .select('count(*)', 'orders')
      .addSelect(`count(*) FILTER (WHERE o.status = 'placed')`, 'placed')
      .addSelect(`count(*) FILTER (WHERE o.status = 'paid')`, 'paid')
      .addSelect(`count(*) FILTER (WHERE o.status = 'shipped')`, 'shipped')
      .addSelect(`count(*) FILTER (WHERE o.status = 'cancelled')`, 'cancelled')
      .addSelect('count(o.receipt_id)', 'receiptsSent')
      .getRawOne<Record<keyof OrderStats, string>>();
    return {
      orders: Number(row?.orders ?? 0),
      placed: Number(row?.placed ?? 0),
      paid: Number(row?.paid ?? 0),
      shipped: Number(row?.shipped ?? 0),
      cancelled: Number(row?.cancelled ?? 0),
      receiptsSent: Number(row?.receiptsSent ?? 0),
    };
  }
}
