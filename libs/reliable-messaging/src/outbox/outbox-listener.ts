import type { Logger } from '@nestjs/common';
import type { Notification, PoolClient } from 'pg';
import type { DataSource, QueryRunner } from 'typeorm';
import { fullJitterDelay, sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';
import { OUTBOX_CHANNEL } from './outbox-store.service';

const RECONNECT_BASE_MS = 250;
const RECONNECT_CAP_MS = 10_000;

/**
 * Keeps one pooled connection LISTENing on a channel (the outbox channel unless told another) and calls
 * `onNotify` with each notification's payload: for the outbox's, whenever a process that writes outbox rows but
 * doesn't relay them has committed some. When the connection drops it reconnects with backoff, and calls
 * `onNotify` once connected again, since commits made in between sent notifications nobody heard. The relay
 * polls as well, so a lost notification only delays a row, never strands it.
 */
export class OutboxListener {
  private readonly stopping = new AbortController();
  private readonly stopped = new Promise<void>((resolve) =>
    this.stopping.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  private loop?: Promise<void>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly onNotify: (payload?: string) => void,
    private readonly logger: Logger,
    private readonly channel: string = OUTBOX_CHANNEL,
    /** Who listens, for the log: `outbox relay` unless told another. */
    private readonly listenerName = 'outbox relay',
  ) {}

  /** Starts listening in the background. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Stops listening and gives the connection back to the pool. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    for (let failures = 0; !this.stopping.signal.aborted;) {
      const lost = await this.listenUntilLost();
      if (this.stopping.signal.aborted) return;
      failures = lost.listened ? 1 : failures + 1;
      const delay = fullJitterDelay(failures, RECONNECT_BASE_MS, RECONNECT_CAP_MS);
      this.logger.warn(
        `${this.listenerName}: commit notifications interrupted (${errorMessage(lost.error)}); polling until listening again in ${delay} ms`,
      );
      await sleep(delay, this.stopping.signal);
    }
  }

  /** Listens on one connection until it fails or the listener stops; resolves with why it ended. */
  private async listenUntilLost(): Promise<{ listened: boolean; error?: unknown }> {
    const runner: QueryRunner = this.dataSource.createQueryRunner();
    let client: PoolClient | undefined;
    let broken = false;
    const onNotification = (notification: Notification): void => {
      if (notification.channel === this.channel) this.onNotify(notification.payload);
    };
    let signalLost: (error: unknown) => void = () => undefined;
    const lost = new Promise<unknown>((resolve) => (signalLost = resolve));
    const onError = (error: unknown): void => {
      broken = true;
      signalLost(error);
    };
    const onEnd = (): void => onError(new Error('connection ended'));
    try {
      client = (await runner.connect()) as PoolClient;
      client.on('notification', onNotification);
      client.on('error', onError);
      client.on('end', onEnd);
      await runner.query(`LISTEN "${this.channel}"`);
      this.onNotify();
      const error = await Promise.race([lost, this.stopped]);
      return { listened: true, error };
    } catch (error) {
      broken = true;
      return { listened: false, error };
    } finally {
      if (client && !broken) await runner.query(`UNLISTEN "${this.channel}"`).catch(() => (broken = true));
      client?.off('notification', onNotification);
      client?.off('error', onError);
      client?.off('end', onEnd);
      if (!runner.isReleased) await runner.release().catch(() => undefined);
    }
  }
}
