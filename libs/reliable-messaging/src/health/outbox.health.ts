import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { OutboxMonitor } from '../outbox/outbox-monitor.service';
import { withTimeout } from '../util/with-timeout';
import { describeFailure } from './failure-description';

/** Seconds the oldest unpublished outbox row may wait before the outbox reports degraded. */
export const DEFAULT_OUTBOX_MAX_AGE_SECONDS = 60;

/**
 * The outbox backlog: pending and parked rows and the age of the oldest pending one. Degraded (still ready)
 * when the oldest row is older than `maxAgeSeconds` or rows are parked, down only when the backlog cannot be
 * read (the database is then down too). A stuck relay is a page, not a reason to stop taking requests whose
 * events wait safely in the outbox.
 */
@Injectable()
export class OutboxHealthIndicator {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly health: HealthIndicatorService,
    private readonly outbox: OutboxMonitor,
  ) {}

  /** Whether there is an outbox at all (the `dataSource` option). */
  get configured(): boolean {
    return this.options.dataSource !== undefined;
  }

  async isHealthy<const Key extends string = 'outbox'>(
    key: Key = 'outbox' as Key,
    maxAgeSeconds = DEFAULT_OUTBOX_MAX_AGE_SECONDS,
  ): Promise<HealthIndicatorResult<Key>> {
    const indicator = this.health.check(key);
    let backlog: { pending: number; oldestAgeSeconds: number; parked: number };
    try {
      backlog = await withTimeout(
        this.outbox.backlog(),
        this.options.probeTimeoutMs,
        'the outbox backlog query',
      );
    } catch (error) {
      return indicator.down({ message: `outbox backlog unreadable: ${describeFailure('database', error)}` });
    }
    const data = {
      pending: backlog.pending,
      oldestAgeSeconds: backlog.oldestAgeSeconds,
      parked: backlog.parked,
    };
    if (backlog.oldestAgeSeconds > maxAgeSeconds) {
      return indicator.degraded({
        ...data,
        message: `the oldest unpublished message waits for ${backlog.oldestAgeSeconds} s`,
      });
    }
    if (backlog.parked > 0) {
      return indicator.degraded({
        ...data,
        message: `${backlog.parked} outbox message(s) parked as unpublishable`,
      });
    }
    return indicator.up(data);
  }
}
