import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { ReliableMessagingTransport } from 'nestjs-reliable-messaging/microservices';
import {
  RELIABLE_MESSAGING_ENTITIES,
  RELIABLE_MESSAGING_MIGRATIONS,
} from 'nestjs-reliable-messaging/typeorm';
import { ParcelModule } from './parcel.module';

/**
 * The parcel service: a Nest RMQ-transport-style service on the messaging module's bridge. `AMQP_URL` and
 * `DATABASE_URL` say where the broker and PostgreSQL are; `PORT` (default 3001) serves Nest's HTTP side.
 */
async function bootstrap(): Promise<void> {
  const dataSource = new DataSource({
    type: 'postgres',
    url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/parcels',
    entities: [...RELIABLE_MESSAGING_ENTITIES],
    migrations: [...RELIABLE_MESSAGING_MIGRATIONS],
    migrationsRun: true,
  });
  await dataSource.initialize();
  const app = await NestFactory.create(
    ParcelModule.forRoot({ amqpUrl: process.env.AMQP_URL ?? 'amqp://127.0.0.1:5672', dataSource }),
    { abortOnError: false },
  );
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  // Where Nest's RMQ transport had `{ transport: Transport.RMQ, options: { urls, queue } }`.
  app.connectMicroservice({ strategy: app.get(ReliableMessagingTransport) });
  await app.startAllMicroservices();
  await app.listen(Number(process.env.PORT ?? 3001));
  Logger.log('parcel service started', 'ParcelService');
}

bootstrap().catch((error: unknown) => {
  Logger.error(
    `parcel service failed to start: ${error instanceof Error ? error.message : String(error)}`,
    'ParcelService',
  );
  process.exit(1);
});
