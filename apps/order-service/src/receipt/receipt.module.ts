import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app-config';
import { FakeReceiptClient } from './fake-receipt-client';
import { HttpReceiptClient } from './http-receipt-client';
import { ReceiptClient } from './receipt-client';
import { ReceiptConsumer } from './receipt.consumer';

/**
 * Receipts: OrderShipped in, a call to the receipt service out. The service is the HTTP one at `RECEIPT_URL` when
 * set, else the in-process fake.
 */
@Module({
  providers: [
    {
      provide: ReceiptClient,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        config.receipt.url
          ? new HttpReceiptClient(config.receipt.url)
          : new FakeReceiptClient(config.receipt),
    },
    ReceiptConsumer,
  ],
  exports: [ReceiptClient],
})
export class ReceiptModule {}
