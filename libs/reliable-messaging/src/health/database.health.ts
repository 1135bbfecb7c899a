import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { DatabaseAvailability } from '../database/database-availability.service';
import { withTimeout } from '../util/with-timeout';
import { describeFailure } from './failure-description';

/**
 * The `dataSource` that holds the outbox and inbox: down while the module knows it to be unavailable (its
 * consumers are paused until it answers), else pinged with `SELECT 1` under the probe timeout.
 *
 * NOTE: the ping goes through the configured DataSource itself rather than Terminus' TypeOrmHealthIndicator,
 * which resolves @nestjs/typeorm's connection token and throws at startup in an app without @nestjs/typeorm.
 */
@Injectable()
export class DatabaseHealthIndicator {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly health: HealthIndicatorService,
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
    const indicator = this.health.check(key);
    const dataSource = this.options.dataSource;
    if (!dataSource) return indicator.down({ message: 'no dataSource is configured' });
    try {
      await withTimeout(dataSource.query('SELECT 1'), this.options.probeTimeoutMs, 'the database');
      return indicator.up();
    } catch (error) {
      return indicator.down({ message: describeFailure('database', error) });
    }
  }
}
