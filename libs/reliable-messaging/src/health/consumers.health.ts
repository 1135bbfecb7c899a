import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { ScheduledRepublisher } from '../scheduling/scheduled-republisher.service';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';

/**
 * Every consumer subscribed to its queue, the scheduled messages' republisher (`scheduling.brokerDelays`) included
 * where this process consumes. While one is not (during a reconnect, after a server cancel) it is
 * down when `readinessRequiresBroker` is on, else degraded: not consuming delays messages, it doesn't stop the
 * pod from serving requests.
 */
@Injectable()
export class ConsumersHealthIndicator {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly health: HealthIndicatorService,
    private readonly registry: ConsumerRegistry,
    private readonly republisher: ScheduledRepublisher,
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
    if (this.republisher.enabled && this.options.consumersEnabled) consumers.push(this.republisher.status);
    const idle = consumers.filter((consumer) => !consumer.consuming).map((consumer) => consumer.queue);
    if (idle.length === 0) return indicator.up({ consumers });
    const data = { consumers, message: `not consuming from ${idle.join(', ')}` };
    return this.options.readinessRequiresBroker ? indicator.down(data) : indicator.degraded(data);
  }
}
