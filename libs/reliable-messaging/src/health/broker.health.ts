import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import type { AmqpConnection } from '../amqp/amqp-connection.service';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { PublisherConnection } from '../amqp/publisher-connection.service';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';

/**
 * The two broker connections, each with its state: `consume: { connected, blocked }` and `publish: { ... }`.
 * Degraded (still ready) while the broker blocks one (a memory or disk alarm). While one is down (the module is
 * reconnecting) it is down when `readinessRequiresBroker` is on, else degraded: an app that publishes through
 * the outbox keeps serving during a broker outage. Never shows the broker's URL or credentials.
 */
@Injectable()
export class BrokerHealthIndicator {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly health: HealthIndicatorService,
    private readonly consumerConnection: ConsumerConnection,
    private readonly publisherConnection: PublisherConnection,
  ) {}

  isHealthy<const Key extends string = 'broker'>(key: Key = 'broker' as Key): HealthIndicatorResult<Key> {
    const indicator = this.health.check(key);
    const all: AmqpConnection[] = [this.consumerConnection, this.publisherConnection];
    const states = { consume: this.consumerConnection.state, publish: this.publisherConnection.state };
    const down = all.filter((connection) => !connection.isConnected).map(({ role }) => role);
    if (down.length > 0) {
      const data = { ...states, message: `not connected (${down.join(', ')}); reconnecting` };
      return this.options.readinessRequiresBroker ? indicator.down(data) : indicator.degraded(data);
    }
    const blocked = all.filter((connection) => connection.isBlocked).map(({ role }) => role);
    if (blocked.length > 0) {
      return indicator.degraded({
        ...states,
        message: `the broker blocks the ${blocked.join(' and ')} connection (a memory or disk alarm)`,
      });
    }
    return indicator.up(states);
  }
}
