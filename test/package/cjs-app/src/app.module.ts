import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ReliableMessagingModule } from 'nestjs-reliable-messaging';
import {
  RELIABLE_MESSAGING_ENTITIES,
  RELIABLE_MESSAGING_MIGRATIONS,
} from 'nestjs-reliable-messaging/typeorm';
import { ReliableMessagingHealthModule } from 'nestjs-reliable-messaging/health';
import { DataSource } from 'typeorm';
import { CreateShipments1767225700000, Shipment } from './shipment.entity';
import { ShipmentBook, ShippingHandler } from './shipping.handler';

@Module({
  imports: [
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      entities: [Shipment, ...RELIABLE_MESSAGING_ENTITIES],
      migrations: [CreateShipments1767225700000, ...RELIABLE_MESSAGING_MIGRATIONS],
      migrationsRun: true,
    }),
    ReliableMessagingModule.forRootAsync({
      inject: [DataSource],
      useFactory: (dataSource: DataSource) => ({
        urls: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
        exchange: process.env.EXCHANGE ?? 'events',
        connectionName: process.env.EXCHANGE ?? 'cjs-app',
        dataSource,
        outbox: { pollIntervalMs: 200 },
      }),
    }),
    TerminusModule,
    ReliableMessagingHealthModule,
  ],
  providers: [ShipmentBook, ShippingHandler],
})
export class AppModule {}
