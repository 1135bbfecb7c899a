import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { AmqpConnection } from '../amqp/amqp-connection.service';

/**
 * The broker connection: down while disconnected (the module is reconnecting), degraded while the broker
 * blocks publishing (a memory or disk alarm). Never shows the broker's URL or credentials.
 */
@Injectable()
export class BrokerHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly connection: AmqpConnection,
  ) {}

  isHealthy<const Key extends string = 'broker'>(key: Key = 'broker' as Key): HealthIndicatorResult<Key> {
    const indicator = this.health.check(key);
    if (!this.connection.isConnected)
      return indicator.down({ connected: false, message: 'not connected; reconnecting' });
    if (this.connection.isBlocked) {
      return indicator.degraded({
        connected: true,
        blocked: true,
        message: 'the broker has blocked publishing',
      });
    }
    return indicator.up({ connected: true, blocked: false });
  }
}
