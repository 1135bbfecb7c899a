import { Module } from '@nestjs/common';
import { OrderHistoryConsumer } from './order-history.consumer';

/** The order history and the activity feed: OrderStatusChanged in, recorded in order. */
@Module({ providers: [OrderHistoryConsumer] })
export class OrderHistoryModule {}
