import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { DeadLetterMonitor } from '../dead-letter/dead-letter-monitor.service';
import { errorMessage } from '../util/error-text';
import { withTimeout } from '../util/with-timeout';

/**
 * Reports each dead-letter queue's depth and the age of its oldest message: degraded while any holds messages,
 * and never down. A dead letter needs a person, not a restart and not less traffic, so it must not fail
 * liveness or readiness.
 */
@Injectable()
export class DeadLetterHealthIndicator {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly health: HealthIndicatorService,
    private readonly deadLetters: DeadLetterMonitor,
  ) {}

  async isHealthy<const Key extends string = 'deadLetters'>(
    key: Key = 'deadLetters' as Key,
  ): Promise<HealthIndicatorResult<Key>> {
    const indicator = this.health.check(key);
    let queues: Record<string, { depth: number; oldestAgeSeconds: number | null }>;
    try {
      const snapshot = await withTimeout(
        this.deadLetters.snapshot(),
        this.options.probeTimeoutMs,
        'the broker',
      );
      queues = Object.fromEntries(
        snapshot.map((stats) => [
          stats.deadLetterQueue,
          { depth: stats.depth, oldestAgeSeconds: stats.oldestAgeSeconds },
        ]),
      );
    } catch (error) {
      return indicator.degraded({ message: `dead-letter depth unknown: ${errorMessage(error)}` });
    }
    const total = Object.values(queues).reduce((sum, stats) => sum + stats.depth, 0);
    return total > 0
      ? indicator.degraded({ queues, message: `${total} dead-lettered message(s) await inspection` })
      : indicator.up({ queues });
  }
}
