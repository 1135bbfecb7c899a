import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { DatabaseAvailability } from '../database/database-availability.service';
import { OverdueHandlers } from '../flow-control/overdue-handlers.service';

/**
 * For liveness: down when every slot of a consumer is held by a handler still running past its deadline. Such
 * handlers ignore their abort signal, and the consumer can take no work until one returns; the process is likely
 * wedged and a restart helps. Nothing here depends on the broker or the database, so their outage never
 * restarts the pod: while the module's database is unavailable, handlers stuck waiting on it are its doing,
 * not the process's, and a restart would only redeliver their messages.
 */
@Injectable()
export class HandlersHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly registry: ConsumerRegistry,
    private readonly overdue: OverdueHandlers,
    private readonly database: DatabaseAvailability,
  ) {}

  isHealthy<const Key extends string = 'handlers'>(key: Key = 'handlers' as Key): HealthIndicatorResult<Key> {
    const indicator = this.health.check(key);
    if (!this.database.isAvailable) return indicator.up({ waitingForDatabase: true });
    const wedged = this.registry.consumers
      .filter((consumer) => this.overdue.count(consumer.queue) >= consumer.concurrency)
      .map((consumer) => `${consumer.queue} (${this.overdue.count(consumer.queue)} overdue)`);
    return wedged.length > 0
      ? indicator.down({ message: `handlers stuck past their deadline: ${wedged.join(', ')}` })
      : indicator.up();
  }
}
