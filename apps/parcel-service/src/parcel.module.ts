import { Module, type DynamicModule } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { ReliableMessagingModule } from 'nestjs-reliable-messaging';
import {
  ReliableMessagingClient,
  ReliableMessagingMicroservicesModule,
} from 'nestjs-reliable-messaging/microservices';
import { LabelBook, PARCELS, ParcelController } from './parcel.controller';

/** Where the parcel service connects. */
export interface ParcelServiceOptions {
  amqpUrl: string;
  dataSource: DataSource;
  /** The module's events exchange and connection name; the defaults suit a service of its own. */
  exchange?: string;
  connectionName?: string;
}

/**
 * The parcel service: the messaging module on the service's DataSource, the controller, and the client under
 * the token the controller injects, where Nest's RMQ transport had `ClientsModule.register(...)`.
 */
@Module({})
export class ParcelModule {
  static forRoot(options: ParcelServiceOptions): DynamicModule {
    return {
      module: ParcelModule,
      imports: [
        ReliableMessagingModule.forRoot({
          urls: options.amqpUrl,
          dataSource: options.dataSource,
          exchange: options.exchange,
          connectionName: options.connectionName ?? 'parcel-service',
        }),
        ReliableMessagingMicroservicesModule,
      ],
      controllers: [ParcelController],
      providers: [LabelBook, { provide: PARCELS, useExisting: ReliableMessagingClient }],
    };
  }
}
