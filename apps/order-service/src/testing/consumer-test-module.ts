import type { Provider } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ReliableMessagingTestingModule } from 'nestjs-reliable-messaging/testing';
import { DataSource } from 'typeorm';
import { orderDataSourceOptions } from '../database/order-data-source';
import { Order } from '../orders/order.entity';

/**
 * The order service's consumers under test: its real database (migrated) and the messaging module on the
 * in-memory broker, so the inbox and the outbox are the real tables, in the handlers' own transactions, and only
 * the broker is replaced. Drive it with the MessagingHarness.
 *
 * NOTE: nestjs-cls is left out: its CommonJS build requires Nest's ESM-only packages, which Jest's module loader
 * cannot do (Node's own can). The consumers write through `ctx.manager`, which needs no CLS.
 */
export async function createConsumerTestModule(
  databaseUrl: string,
  providers: Provider[],
): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRoot({ ...orderDataSourceOptions(databaseUrl), logging: false, retryAttempts: 0 }),
      TypeOrmModule.forFeature([Order]),
      ReliableMessagingTestingModule.forRootAsync({
        inject: [DataSource],
        useFactory: (dataSource: DataSource) => ({ dataSource, connectionName: 'order-service' }),
      }),
    ],
    providers,
  })
    .setLogger({ log() {}, warn() {}, error() {}, debug() {}, verbose() {} })
    .compile();
  await moduleRef.init();
  return moduleRef;
}
