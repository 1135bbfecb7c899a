import type { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';

/**
 * The least time between two NOTIFYs of one process on one channel: the first commit after a quiet spell notifies
 * at once, the commits of the next interval share one NOTIFY at its end. A listener elsewhere hears of a commit at
 * most this late.
 */
export const NOTIFY_INTERVAL_MS = 10;

/**
 * NOTIFYs on one channel for the commits that ask for one, coalesced: one in flight, at most one per
 * NOTIFY_INTERVAL_MS, so a busy writer sends about a hundred a second rather than one per commit. Each is
 * committed asynchronously (a lost one delays the listeners by a poll at most). The payload is the earliest of the
 * times (ms since the epoch) asked for since the last NOTIFY, or empty when none was given.
 */
export class CoalescedNotify {
  private sending?: Promise<void>;
  private asked = false;
  private earliest?: number;
  private lastSentAt = 0;
  private failed = false;

  /** `warning(reason)` is logged when a NOTIFY fails, once until one succeeds again. */
  constructor(
    private readonly channel: string,
    private readonly logger: Logger,
    private readonly warning: (reason: string) => string,
  ) {}

  /** Asks for a NOTIFY on `dataSource`, carrying `at` unless an earlier time is already waiting. */
  ask(dataSource: DataSource, at?: number): void {
    this.asked = true;
    if (at !== undefined) this.earliest = Math.min(this.earliest ?? Infinity, at);
    this.sending ??= this.send(dataSource);
  }

  /** Resolves once no NOTIFY is in flight. */
  async settled(): Promise<void> {
    await this.sending;
  }

  /** Sends while commits ask, at most one per NOTIFY_INTERVAL_MS. Never rejects. */
  private async send(dataSource: DataSource): Promise<void> {
    while (this.asked) {
      const wait = this.lastSentAt + NOTIFY_INTERVAL_MS - Date.now();
      if (wait > 0) await sleep(wait);
      this.asked = false;
      const at = this.earliest;
      this.earliest = undefined;
      this.lastSentAt = Date.now();
      try {
        await dataSource.query(`SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)`, [
          this.channel,
          at === undefined ? '' : String(Math.round(at)),
        ]);
        this.failed = false;
      } catch (error) {
        if (!this.failed) this.logger.warn(this.warning(errorMessage(error)));
        this.failed = true;
      }
    }
    // In the same turn as the loop's last check, so a commit after it starts a new round.
    this.sending = undefined;
  }
}
