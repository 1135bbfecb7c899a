import { Inject, Injectable, Logger } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { OutboxListener } from '../outbox/outbox-listener';
import { OutboxRelay } from '../outbox/outbox-relay.service';
import { fullJitterDelay, sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';
import { SCHEDULED_CHANNEL, ScheduledStore } from './scheduled-store.service';

/** Due rows one promotion moves into the outbox; a full batch is followed at once by the next. */
export const PROMOTE_BATCH = 1000;
/** Backoff after a promotion failed (the database unreachable, say): first ceiling and cap, as the relay's. */
const FAILURE_BASE_MS = 200;
const FAILURE_CAP_MS = 10_000;

/** Running totals of one promoter, for metrics. */
export interface ScheduledPromoterStats {
  /** Rows moved into the outbox by this process. */
  promoted: number;
}

/**
 * Moves scheduled messages into the outbox when they are due (ScheduledStore.promote: one statement, so a row is
 * never lost or doubled) and wakes the relay, which sends them. Between promotions it sleeps until the next row is
 * due, at most `outbox.pollIntervalMs` (a row scheduled meanwhile by another process is found then at the latest);
 * a commit in this process that scheduled an earlier row shortens the sleep (`expect`), and so does a NOTIFY on
 * SCHEDULED_CHANNEL from a process that schedules but does not relay. Runs in every process that relays
 * (promoters share the due rows with SKIP LOCKED); MessagingLifecycle starts it with the relay and stops it just
 * before.
 */
@Injectable()
export class ScheduledPromoter {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly stopping = new AbortController();
  private readonly totals: ScheduledPromoterStats = { promoted: 0 };
  private listener?: OutboxListener;
  private loop?: Promise<void>;
  /** The earliest due time announced while a promotion ran, which its snapshot may have missed. */
  private announced = Infinity;
  /** While the loop sleeps: when it wakes, its timer, and how to wake it. */
  private sleeping?: { until: number; timer: NodeJS.Timeout; resume: () => void };

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: ScheduledStore,
    private readonly relay: OutboxRelay,
  ) {}

  /** True where the relay runs: the promoter runs beside it. */
  get enabled(): boolean {
    return this.relay.enabled;
  }

  /** Totals since start. */
  get stats(): Readonly<ScheduledPromoterStats> {
    return { ...this.totals };
  }

  /** Starts listening for announcements and promoting; does nothing unless `enabled`. */
  start(): void {
    const dataSource = this.options.dataSource;
    if (!dataSource || !this.enabled || this.loop || this.stopping.signal.aborted) return;
    this.listener = new OutboxListener(
      dataSource,
      (payload) => this.expect(payload ? Number(payload) : Date.now()),
      this.logger,
      SCHEDULED_CHANNEL,
      'scheduled messages',
    );
    this.listener.start();
    this.loop = this.run();
  }

  /**
   * Tells the promoter a committed row is due at `dueAt` (ms since the epoch): it wakes then if it would sleep
   * longer. A time that is not a number wakes it now.
   */
  expect(dueAt: number): void {
    const at = Number.isFinite(dueAt) ? dueAt : Date.now();
    if (!this.sleeping) {
      this.announced = Math.min(this.announced, at);
      return;
    }
    if (at < this.sleeping.until) this.arm(at);
  }

  /** Stops after the promotion in progress (one statement: it commits or not as a whole), stops listening. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.sleeping?.resume();
    await this.loop;
    await this.listener?.stop();
  }

  private async run(): Promise<void> {
    const { pollIntervalMs } = this.options.outbox;
    for (let failures = 0; !this.stopping.signal.aborted;) {
      this.announced = Infinity;
      let round;
      try {
        round = await this.store.promote(PROMOTE_BATCH);
        failures = 0;
      } catch (error) {
        failures++;
        const delay = fullJitterDelay(failures, FAILURE_BASE_MS, FAILURE_CAP_MS);
        this.logger.warn(
          `scheduled messages: promoting the due ones failed (${errorMessage(error)}); trying again in ${delay} ms`,
        );
        await sleep(delay, this.stopping.signal);
        continue;
      }
      if (round.promoted > 0) {
        this.totals.promoted += round.promoted;
        this.relay.wake();
      }
      if (round.promoted === PROMOTE_BATCH) continue;
      const now = Date.now();
      const next = Math.min(now + (round.nextDueInMs ?? Infinity), now + pollIntervalMs, this.announced);
      await this.sleepUntil(next);
    }
  }

  /** Sleeps until `until`, or less when an earlier row is announced (see `expect`) or the promoter stops. */
  private sleepUntil(until: number): Promise<void> {
    if (this.stopping.signal.aborted || until <= Date.now()) return Promise.resolve();
    return new Promise((resolve) => {
      const resume = (): void => {
        if (this.sleeping) clearTimeout(this.sleeping.timer);
        this.sleeping = undefined;
        resolve();
      };
      this.sleeping = { until, timer: setTimeout(resume, until - Date.now()), resume };
    });
  }

  /** Makes the sleep end at `until` instead. */
  private arm(until: number): void {
    const sleeping = this.sleeping;
    if (!sleeping) return;
    clearTimeout(sleeping.timer);
    sleeping.until = until;
    sleeping.timer = setTimeout(sleeping.resume, Math.max(0, until - Date.now()));
  }
}
