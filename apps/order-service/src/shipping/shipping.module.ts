import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Order } from '../orders/order.entity';
import { ShippingConsumer } from './shipping.consumer';

/** Shipping: ships orders once OrderPaid says they may be paid. */
@Module({
  imports: [TypeOrmModule.forFeature([Order])],
  providers: [ShippingConsumer],
})
export class ShippingModule {}
