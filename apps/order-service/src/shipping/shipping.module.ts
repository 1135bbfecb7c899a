import { Module } from '@nestjs/common';
import { ShippingConsumer } from './shipping.consumer';

/** Shipping: ships orders once OrderPaid says they are paid, and answers OrderShipped or ShipmentFailed. */
@Module({ providers: [ShippingConsumer] })
export class ShippingModule {}
