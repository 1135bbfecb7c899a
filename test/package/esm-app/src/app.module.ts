import { Module } from '@nestjs/common';
import { ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { GreetingHandler } from './greeting.handler.js';

@Module({
  imports: [
    ReliableMessagingModule.forRoot({
      urls: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
      exchange: process.env.EXCHANGE ?? 'events',
      connectionName: process.env.EXCHANGE ?? 'esm-app',
    }),
  ],
  providers: [GreetingHandler],
})
export class AppModule {}
