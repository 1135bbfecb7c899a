import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, TypeOrmHealthIndicator, type HealthIndicatorResult } from '@nestjs/terminus';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { DatabaseAvailability } from '../database/database-availability.service';

/**
 * The `dataSource` that holds the outbox and inbox: down while the module knows it to be unavailable (its
 * consumers are paused until it answers), else pinged under the probe timeout.
 */
@Injectable()
export class DatabaseHealthIndicator {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly health: HealthIndicatorService,
    private readonly typeOrm: TypeOrmHealthIndicator,
    private readonly availability: DatabaseAvailability,
  ) {}

  /** Whether a database is configured at all; without one there is nothing to check. */
  get configured(): boolean {
    return this.options.dataSource !== undefined;
  }

  async isHealthy<const Key extends string = 'database'>(
    key: Key = 'database' as Key,
  ): Promise<HealthIndicatorResult<Key>> {
    const since = this.availability.unavailableSince;
    if (since !== undefined) {
      return this.health.check(key).down({
        available: false,
        unavailableForMs: Date.now() - since,
        message: 'the database does not answer; consumers that need it are paused until it does',
      });
    }
    return this.typeOrm
      .pingCheck(key, { connection: this.options.dataSource })
      .withTimeout(this.options.probeTimeoutMs);
  }
}
