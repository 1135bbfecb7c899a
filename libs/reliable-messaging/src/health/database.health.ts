import { Inject, Injectable } from '@nestjs/common';
import { TypeOrmHealthIndicator, type HealthIndicatorResult } from '@nestjs/terminus';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';

/** Pings the `dataSource` that holds the outbox and inbox, under the probe timeout. */
@Injectable()
export class DatabaseHealthIndicator {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly typeOrm: TypeOrmHealthIndicator,
  ) {}

  /** Whether a database is configured at all; without one there is nothing to check. */
  get configured(): boolean {
    return this.options.dataSource !== undefined;
  }

  async isHealthy<const Key extends string = 'database'>(
    key: Key = 'database' as Key,
  ): Promise<HealthIndicatorResult<Key>> {
    return this.typeOrm
      .pingCheck(key, { connection: this.options.dataSource })
      .withTimeout(this.options.probeTimeoutMs);
  }
}
