import {
  type DynamicModule,
  type MiddlewareConsumer,
  Module,
  type NestModule,
  ValidationPipe,
} from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { IdempotencyModule } from 'nestjs-reliable-messaging/http';
import { DeadLetterAdminModule, ReliableMessagingAdminModule } from 'nestjs-reliable-messaging-admin';
import { ClsModule } from 'nestjs-cls';
import { DataSource } from 'typeorm';
import { APP_CONFIG, readAdminToken, type AppConfig } from './config/app-config';
import { AppConfigModule } from './config/app-config.module';
import { isToolMode, toolModeMessagingOptions } from './cli/tool-mode';
import { orderDataSourceOptions } from './database/order-data-source';
import { OrdersModule } from './orders/orders.module';
import { OrderHistoryModule } from './history/order-history.module';
import { OrderSagaModule } from './fulfilment/order-saga.module';
import { PaymentModule } from './payment/payment.module';
import { ReceiptModule } from './receipt/receipt.module';
import { ShippingModule } from './shipping/shipping.module';
import { HealthModule } from './health/health.module';
import { ErrorResponsesFilter } from './http/error-responses.filter';
import { JsonBodyMiddleware } from './http/json-body.middleware';
import { ObservabilityModule } from './observability/observability.module';

/** Where the admin API is served; the operator console is under `<path>/console`. */
const ADMIN_PATH = 'admin/dead-letters';

/**
 * The admin API for dead letters and parked outbox rows (`/admin/dead-letters`, `/admin/dead-letters/outbox`)
 * and the operator console (`/admin/dead-letters/console`, signed in with the same tokens), mounted only when
 * `ADMIN_TOKEN` is set; `ADMIN_VIEWER_TOKEN` adds a read-only token. Decided when this file loads, as a module's
 * imports are fixed then.
 */
function adminApi(): DynamicModule[] {
  const { adminToken, adminViewerToken, consoleSessionSecret } = readAdminToken(process.env);
  if (!adminToken) return [];
  return [
    DeadLetterAdminModule.register({
      path: ADMIN_PATH,
      tokens: {
        admin: adminToken,
        ...(adminViewerToken ? { viewer: { token: adminViewerToken, role: 'viewer' as const } } : {}),
      },
      console: true,
      consoleSessionSecret,
    }),
  ];
}

/**
 * The order service: HTTP API, PostgreSQL through TypeORM, transactions propagated by nestjs-cls (so the
 * messaging module's outbox and inbox join them), the order saga, and the payment gateway, shipping and receipt
 * consumers it drives.
 */
@Module({
  imports: [
    AppConfigModule,
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => orderDataSourceOptions(config.databaseUrl),
    }),
    ClsModule.forRoot({
      global: true,
      middleware: { mount: true },
      plugins: [
        new ClsPluginTransactional({
          imports: [TypeOrmModule],
          adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource }),
        }),
      ],
    }),
    ReliableMessagingModule.forRootAsync({
      inject: [APP_CONFIG, DataSource],
      useFactory: (config: AppConfig, dataSource: DataSource) => ({
        urls: config.amqpUrls,
        exchange: config.messaging.exchange,
        deadLetterExchange: config.messaging.deadLetterExchange,
        connectionName: config.messaging.connectionName,
        dataSource,
        retry: config.retry,
        reconnect: config.reconnect,
        defaultDeadlineMs: config.handlerDeadlineMs,
        shutdownTimeoutMs: config.shutdownTimeoutMs,
        ...toolModeMessagingOptions(),
      }),
    }),
    // Idempotency-Key on POST /orders: the key commits in the order's transaction (docs/http-idempotency.md).
    IdempotencyModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({ ttlMs: config.idempotencyKeyTtlMs, prune: !isToolMode() }),
    }),
    OrdersModule,
    OrderSagaModule,
    PaymentModule,
    ShippingModule,
    OrderHistoryModule,
    ReceiptModule,
    HealthModule,
    ObservabilityModule,
    // The dead-letter and outbox operations the `dlq` command line runs on (and the admin API, when mounted).
    ReliableMessagingAdminModule,
    ...adminApi(),
  ],
  providers: [
    { provide: APP_FILTER, useClass: ErrorResponsesFilter },
    {
      provide: APP_PIPE,
      // maxErrorMessagesLength: a 400 lists every problem, but never more than about 2 kB of them.
      useValue: new ValidationPipe({
        whitelist: true,
        forbidNonWhitelisted: true,
        transform: true,
        maxErrorMessagesLength: 2000,
      }),
    },
  ],
})
export class AppModule implements NestModule {
  /**
   * JSON bodies are read and checked by JsonBodyMiddleware (main.ts turns Nest's body parser off), on every route
   * but the operator console's. The console posts HTML forms (`application/x-www-form-urlencoded`), which the
   * middleware rightly refuses with 415, and reads them itself: up to 1 MiB, only on its own routes, and only
   * after its guard has checked the session cookie, with each POST's CSRF token checked before any action.
   * Excluding the console's routes, rather than letting any non-JSON body through, keeps the 415 for every JSON
   * route (the order API and the admin API, whose bodies nothing else would read), so a form post can never reach
   * a controller that expects a checked JSON body.
   */
  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(JsonBodyMiddleware)
      .exclude(`${ADMIN_PATH}/console`, `${ADMIN_PATH}/console/{*rest}`)
      .forRoutes('*');
  }
}
