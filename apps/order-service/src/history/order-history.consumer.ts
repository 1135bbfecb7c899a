import { Injectable } from '@nestjs/common';
import { Consume, type MessageContext } from 'nestjs-reliable-messaging';
import { QUEUES } from '../config/messaging-names';
import { handlerTransaction } from '../database/handler-transaction';
import { OrderStatusChanged } from '../messages/order-status-changed.message';
import type { HistoryRecorder } from './order-history-entry.entity';

/** Partitions of the history consumer: up to this many orders' changes are handled at once, across replicas. */
export const HISTORY_PARTITIONS = 4;

/**
 * The two ordered consumers of the order service, each recording every status change it handles, in the handler's
 * transaction with its inbox row:
 * - the order history is ordered by key (the order id): each order's changes in the order they happened, the
 *   orders in parallel over HISTORY_PARTITIONS partitions;
 * - the activity feed is ordered by queue (a single active consumer): every change of every order, one at a time,
 *   in the order they reached the queue, as a feed to a system that reads it in sequence would need.
 */
@Injectable()
export class OrderHistoryConsumer {
  @Consume({
    queue: QUEUES.history,
    ordering: { by: 'key', partitions: HISTORY_PARTITIONS },
  })
  async onStatusChanged(event: OrderStatusChanged, ctx: MessageContext): Promise<void> {
    await record('history', event, ctx);
  }

  @Consume({ queue: QUEUES.activity, ordering: 'queue' })
  async onActivity(event: OrderStatusChanged, ctx: MessageContext): Promise<void> {
    await record('activity', event, ctx);
  }
}

async function record(
  recorder: HistoryRecorder,
  event: OrderStatusChanged,
  ctx: MessageContext,
): Promise<void> {
  await handlerTransaction(ctx).query(
    'INSERT INTO order_history (recorder, order_id, status, sequence) VALUES ($1, $2, $3, $4)',
    [recorder, event.orderId, event.status, event.sequence],
  );
}
