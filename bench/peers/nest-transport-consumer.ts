import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  Ctx,
  EventPattern,
  Payload,
  RmqContext,
  Transport,
  type ConsumerDeserializer,
  type IncomingEvent,
  type MicroserviceOptions,
} from '@nestjs/microservices';
import type { Channel, Message, MessageProperties } from 'amqplib';
import type { Progress } from '../harness';
import { runPeer } from './peer-child';

/**
 * NestJS's RMQ transport reads a message's pattern from its body (`{ pattern, data }`); a message another client
 * sent carries its type in the AMQP `type` property instead, so this deserializer takes the pattern from there,
 * as an app consuming such messages must.
 */
class TypePropertyDeserializer implements ConsumerDeserializer {
  deserialize(value: unknown, properties?: MessageProperties): IncomingEvent {
    return { pattern: properties?.type as string, data: value };
  }
}

/**
 * The NestJS RMQ transport contender of the peers benchmark: an `@EventPattern()` handler that does no work of its
 * own and then acks through its RmqContext (`noAck: false`).
 */
runPeer(async ({ queue, prefetch, url }, progress) => {
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(benchModule(progress), {
    transport: Transport.RMQ,
    options: {
      urls: [url],
      queue,
      // The queue is the benchmark's, declared with the module's arguments: not asserted.
      noAssert: true,
      noAck: false,
      prefetchCount: prefetch,
      deserializer: new TypePropertyDeserializer(),
    },
    logger: ['error', 'warn'],
  });
  await app.listen();
  return () => app.close();
});

function benchModule(progress: Progress): new () => unknown {
  @Controller()
  class BenchController {
    @EventPattern<string>('bench.order-placed')
    onOrderPlaced(@Payload() _event: unknown, @Ctx() context: RmqContext): void {
      progress.started();
      (context.getChannelRef() as Channel).ack(context.getMessage() as Message);
      progress.completed();
    }
  }

  @Module({ controllers: [BenchController] })
  class BenchModule {}

  return BenchModule;
}
