import type { TypeOrmModuleOptions } from '@nestjs/typeorm';
import {
  RELIABLE_MESSAGING_ENTITIES,
  RELIABLE_MESSAGING_MIGRATIONS,
} from 'nestjs-reliable-messaging/typeorm';
import { ADMIN_ENTITIES, ADMIN_MIGRATIONS } from 'nestjs-reliable-messaging-admin/typeorm';
import { OrderItem } from '../orders/order-item.entity';
import { Order } from '../orders/order.entity';
import { OrderHistoryEntry } from '../history/order-history-entry.entity';
import { Payment } from '../payment/payment.entity';
import { DatabaseLogger } from './database-logger';
import { CreateOrders1764403200000 } from './migrations/1764403200000-create-orders.migration';
import { CreatePayments1764576000000 } from './migrations/1764576000000-create-payments.migration';
import { CreateOrderHistory1767312000000 } from './migrations/1767312000000-create-order-history.migration';
import { OrderSaga1767830400000 } from './migrations/1767830400000-order-saga.migration';

/** The order service's entities. */
export const ORDER_ENTITIES = [Order, OrderItem, Payment, OrderHistoryEntry];

/** The order service's migrations, oldest first. */
export const ORDER_MIGRATIONS = [
  CreateOrders1764403200000,
  CreatePayments1764576000000,
  CreateOrderHistory1767312000000,
  OrderSaga1767830400000,
];

/**
 * The app's PostgreSQL data source: migrations apply themselves at start, the schema is never synchronized.
 * The messaging module's outbox and inbox tables (and the admin package's audit table) live in the same database, so that orders, their events and
 * the inbox rows commit in one transaction.
 */
export function orderDataSourceOptions(databaseUrl: string): TypeOrmModuleOptions {
  return {
    type: 'postgres',
    url: databaseUrl,
    entities: [...ORDER_ENTITIES, ...RELIABLE_MESSAGING_ENTITIES, ...ADMIN_ENTITIES],
    migrations: [...RELIABLE_MESSAGING_MIGRATIONS, ...ADMIN_MIGRATIONS, ...ORDER_MIGRATIONS],
    migrationsRun: true,
    synchronize: false,
    // Through the app's logger, and a failed query without its parameters, which hold customer data.
    logger: new DatabaseLogger(),
    logging: ['error', 'warn', 'migration'],
    // The consumers' handlers (53 at most at once: their `concurrency`, one per history partition and one for
    // the activity feed), HTTP requests and the outbox relay share the pool.
    poolSize: 60,
    retryAttempts: 5,
    retryDelay: 1000,
  };
}
