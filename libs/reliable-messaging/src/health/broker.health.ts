import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import type { AmqpConnection } from '../amqp/amqp-connection.service';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { PublisherConnection } from '../amqp/publisher-connection.service';

/**
 * The two broker connections, each with its state: `consume: { connected, blocked }` and `publish: { ... }`.
 * Down while one is down (the module is reconnecting), degraded while the broker blocks one (a memory or disk
 * alarm). Never shows the broker's URL or credentials.
 */
@Injectable()
export class BrokerHealthIndicator {
  constructor(
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
      return indicator.down({ ...states, message: `not connected (${down.join(', ')}); reconnecting` });
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
