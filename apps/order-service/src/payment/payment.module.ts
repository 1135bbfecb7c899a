import { Module } from '@nestjs/common';
import { PaymentGateway } from './payment-gateway.consumer';

/** The stand-in payment gateway: RequestPayment, RefundPayment and OrderCancelled in; its answers out. */
@Module({ providers: [PaymentGateway] })
export class PaymentModule {}
