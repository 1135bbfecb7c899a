import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';

/** Every consumer subscribed to its queue; down while any is not (after a reconnect or a server cancel). */
@Injectable()
export class ConsumersHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly registry: ConsumerRegistry,
  ) {}

  isHealthy<const Key extends string = 'consumers'>(
    key: Key = 'consumers' as Key,
  ): HealthIndicatorResult<Key> {
    const indicator = this.health.check(key);
    const consumers = this.registry.statuses.map(({ queue, consuming, inFlight }) => ({
      queue,
      consuming,
      inFlight,
    }));
    const idle = consumers.filter((consumer) => !consumer.consuming).map((consumer) => consumer.queue);
    return idle.length > 0
      ? indicator.down({ consumers, message: `not consuming from ${idle.join(', ')}` })
      : indicator.up({ consumers });
  }
}
