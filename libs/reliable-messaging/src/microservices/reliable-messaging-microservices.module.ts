import { Module } from '@nestjs/common';
import { ReliableMessagingClient } from './reliable-messaging.client';
import { ReliableMessagingTransport } from './reliable-messaging.transport';

/**
 * The bridge from `@nestjs/microservices`: provides `ReliableMessagingTransport` (serves `@EventPattern()` and
 * `@MessagePattern()` handlers) and `ReliableMessagingClient` (`emit()` and `send()` through the publisher).
 * Import it beside `ReliableMessagingModule.forRoot()`, which it builds on; it is the only part of the package
 * that loads `@nestjs/microservices`.
 */
@Module({
  providers: [ReliableMessagingTransport, ReliableMessagingClient],
  exports: [ReliableMessagingTransport, ReliableMessagingClient],
})
export class ReliableMessagingMicroservicesModule {}
