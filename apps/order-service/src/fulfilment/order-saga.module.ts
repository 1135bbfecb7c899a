import { Module } from '@nestjs/common';
import { OrderSaga } from './order-saga';

/** The order's saga: the flow from placed to shipped, its payment timeout and its compensation. */
@Module({ providers: [OrderSaga] })
export class OrderSagaModule {}
