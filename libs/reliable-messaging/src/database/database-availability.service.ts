import { Inject, Injectable, Logger } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { fullJitterDelay, sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';

const PROBE_BASE_MS = 100;
const PROBE_CAP_MS = 5_000;

/**
 * Whether the module's database answers. A consumer that meets an outage reports it here; from then on every
 * consumer that needs the database holds its deliveries (and their concurrency slots) instead of starting new
 * work, while one probe loop asks the database `SELECT 1` with backoff until it answers. Readiness and the
 * `rm_database_available` gauge read the state.
 */
@Injectable()
export class DatabaseAvailability {
  private readonly logger = new Logger('ReliableMessaging');
  private outage?: { since: number; back: Promise<void>; end: () => void };
  private readonly stopped = new AbortController();
  private failedProbes = 0;

  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  /** False from a reported outage until the database answers again. */
  get isAvailable(): boolean {
    return this.outage === undefined;
  }

  /** When the current outage was first seen, epoch milliseconds; undefined while the database answers. */
  get unavailableSince(): number | undefined {
    return this.outage?.since;
  }

  /** Probes that found the database down, ever: a count that moved proves an outage was real. */
  get probeFailures(): number {
    return this.failedProbes;
  }

  /** Records that the database did not answer (`error` says how) and starts probing it, once per outage. */
  reportOutage(error: unknown): void {
    if (this.outage || !this.options.dataSource || this.stopped.signal.aborted) return;
    let end!: () => void;
    const back = new Promise<void>((resolve) => (end = resolve));
    this.outage = { since: Date.now(), back, end };
    this.logger.warn(
      `the database is unavailable (${errorMessage(error)}); consumers that need it hold their messages until it answers`,
    );
    void this.probeUntilBack();
  }

  /** Whether the database answers `SELECT 1` now, within the probe timeout. */
  async answers(): Promise<boolean> {
    const dataSource = this.options.dataSource;
    if (!dataSource) return false;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.options.probeTimeoutMs);
    });
    try {
      return await Promise.race([
        dataSource.query('SELECT 1').then(
          () => true,
          () => false,
        ),
        timedOut,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resolves once the database answers, at once when it does now, or when `signal` aborts (check it after). */
  whenAvailable(signal: AbortSignal): Promise<void> {
    const outage = this.outage;
    if (!outage || signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      void outage.back.then(done);
    });
  }

  /** Stops probing at shutdown; waiters are released by their own signals. */
  stop(): void {
    this.stopped.abort();
  }

  private async probeUntilBack(): Promise<void> {
    const dataSource = this.options.dataSource;
    for (let attempt = 1; dataSource && !this.stopped.signal.aborted; attempt++) {
      await sleep(fullJitterDelay(attempt, PROBE_BASE_MS, PROBE_CAP_MS), this.stopped.signal);
      // NOTE: within the probe timeout, so a database that hangs rather than refuses counts as down too.
      if (await this.answers()) break;
      this.failedProbes++;
    }
    const outage = this.outage;
    if (!outage) return;
    this.outage = undefined;
    if (!this.stopped.signal.aborted)
      this.logger.log(`the database answers again after ${Date.now() - outage.since} ms; consumers resume`);
    outage.end();
  }
}
