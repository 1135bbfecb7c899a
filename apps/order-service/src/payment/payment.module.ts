import { Module } from '@nestjs/common';
import { PaymentConsumer } from './payment.consumer';

/** Payment: OrderPlaced in, OrderPaid out. */
@Module({ providers: [PaymentConsumer] })
export class PaymentModule {}
