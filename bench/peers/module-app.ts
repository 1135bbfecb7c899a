import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { Consume, ReliableMessagingModule, type QueueType } from 'nestjs-reliable-messaging';
import { BenchOrderPlaced } from '../bench-message';
import type { Progress } from '../harness';

/**
 * The module's contender: the consume suite's app (one `@Consume()` handler of the validated bench message that
 * does no work of its own, as many handlers at once as the prefetch). `progress` is absent when the suite boots
 * it only to have it declare its queue.
 */
export function moduleConsumerApp(
  url: string,
  exchange: string,
  queue: string,
  queueType: QueueType,
  prefetch: number,
  progress?: Progress,
): DynamicModule {
  @Injectable()
  class BenchConsumer {
    @Consume({ queue, queueType, concurrency: prefetch, prefetch })
    async onOrderPlaced(_event: BenchOrderPlaced): Promise<void> {
      progress?.started();
      progress?.completed();
    }
  }

  @Module({
    imports: [ReliableMessagingModule.forRoot({ urls: url, exchange, connectionName: `${queue}.app` })],
    providers: [BenchConsumer],
  })
  class BenchConsumerModule {}

  return { module: BenchConsumerModule };
}
