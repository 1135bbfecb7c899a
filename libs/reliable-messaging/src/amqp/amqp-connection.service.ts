import { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import type { ChannelModel } from 'amqplib';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { fullJitterDelay, sleep } from '../util/backoff';
import { redactUrl } from '../util/redact-url';
import { errorMessage } from '../util/error-text';

/** What a connection carries: consumers and topology, or publishing only. Its name ends with `:<role>`. */
export type ConnectionRole = 'consume' | 'publish';

/** Sets up a fresh connection (declare topology, open channels, subscribe); runs after every (re)connection. */
export type ConnectionSetup = (model: ChannelModel) => Promise<void>;

/** What health and metrics show of one connection. */
export interface ConnectionState {
  connected: boolean;
  /** True while the broker blocks the connection (a memory or disk alarm) and reads nothing from it. */
  blocked: boolean;
}

/**
 * One AMQP connection of the process and its recovery; the module holds two, ConsumerConnection and
 * PublisherConnection, so that a broker alarm, which blocks a connection as soon as it publishes, never stalls
 * the acknowledgements of consumers. When the connection drops it reconnects with exponential backoff and full
 * jitter, trying each configured URL in turn, then runs its setup again. The broker shows it as
 * `<connectionName>:<role>`. Errors are logged, never thrown into the event loop.
 */
export abstract class AmqpConnection extends EventEmitter {
  protected readonly logger = new Logger('ReliableMessaging');
  /** The name the broker shows for this connection: `<connectionName>:<role>`. */
  readonly name: string;
  private current?: ChannelModel;
  private readonly closing = new AbortController();
  private loop?: Promise<void>;
  private urlIndex = 0;
  private connectedOnce = false;
  private blockedSince?: number;
  private blockedBefore = 0;
  private unblock?: { promise: Promise<void>; resolve: () => void };

  protected constructor(
    protected readonly options: ResolvedMessagingOptions,
    /** What this connection carries. */
    readonly role: ConnectionRole,
  ) {
    super();
    this.name = `${options.connectionName}:${role}`;
    // NOTE: an EventEmitter with no 'error' listener throws; this one only reports, so it must never throw.
    this.on('error', () => undefined);
  }

  /** The live connection, if any. */
  get model(): ChannelModel | undefined {
    return this.current;
  }

  get isConnected(): boolean {
    return this.current !== undefined;
  }

  /** True while the broker blocks this connection (a memory or disk alarm). */
  get isBlocked(): boolean {
    return this.blockedSince !== undefined;
  }

  /** Connected and blocked, for health and metrics. */
  get state(): ConnectionState {
    return { connected: this.isConnected, blocked: this.isBlocked };
  }

  /** Milliseconds this connection has spent blocked since the process started, the current block included. */
  get blockedMs(): number {
    const now = this.blockedSince === undefined ? 0 : performance.now() - this.blockedSince;
    return this.blockedBefore + now;
  }

  /** The broker address in use, without credentials. */
  get redactedUrl(): string {
    return redactUrl(this.options.urls[this.urlIndex % this.options.urls.length]);
  }

  /** Resolves once the broker unblocks this connection, or once it closes; at once when it is not blocked. */
  whenUnblocked(): Promise<void> {
    return this.unblock?.promise ?? Promise.resolve();
  }

  /**
   * Connects, runs `setup`, and keeps the connection up until `close()`, running `setup` again after every
   * reconnection. Fails if the first connection and its setup don't succeed within the startup timeout.
   */
  async start(setup: ConnectionSetup): Promise<void> {
    if (this.loop) return;
    const firstConnection = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `could not connect to the broker at ${this.redactedUrl} within ${this.options.startupTimeoutMs} ms`,
            ),
          ),
        this.options.startupTimeoutMs,
      );
      this.once('connected', () => {
        clearTimeout(timer);
        resolve();
      });
      this.once('startup-failed', (error: Error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    this.loop = this.run(setup);
    try {
      await firstConnection;
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /** Closes the connection and stops reconnecting; whoever waits for an unblock is released. */
  async close(): Promise<void> {
    this.closing.abort();
    this.setBlocked(false);
    const model = this.current;
    this.current = undefined;
    if (model) {
      // NOTE: amqplib closes a blocked connection at once, without waiting for a close-ok the broker would
      // never send while it reads nothing from the socket.
      await model.close().catch(() => undefined);
    }
    await this.loop?.catch(() => undefined);
  }

  private async run(setup: ConnectionSetup): Promise<void> {
    const label = `${this.role === 'consume' ? 'consumer' : 'publisher'} connection`;
    let failures = 0;
    while (!this.closing.signal.aborted) {
      const url = this.options.urls[this.urlIndex % this.options.urls.length];
      let model: ChannelModel;
      try {
        model = await this.options.brokerConnector(this.withHeartbeat(url), {
          ...this.options.tls,
          clientProperties: { connection_name: this.name },
        });
      } catch (error) {
        failures++;
        this.urlIndex++;
        const delay = fullJitterDelay(
          failures,
          this.options.reconnect.initialDelayMs,
          this.options.reconnect.maxDelayMs,
        );
        this.logger.warn(
          `${label}: connecting to ${redactUrl(url)} failed (${errorMessage(error)}); retrying in ${delay} ms`,
        );
        await sleep(delay, this.closing.signal);
        continue;
      }
      const closed = new Promise<void>((resolve) =>
        model.once('close', () => {
          if (this.current === model) this.current = undefined;
          this.setBlocked(false);
          resolve();
        }),
      );
      model.on('error', (error: Error) => this.logger.warn(`${label}: ${errorMessage(error)}`));
      model.on('blocked', (reason: string) => {
        this.setBlocked(true);
        this.logger.warn(`${label}: the broker blocks it (${reason}); publishing waits`);
      });
      model.on('unblocked', () => {
        this.setBlocked(false);
        this.logger.log(`${label}: the broker unblocked it`);
      });
      this.current = model;
      let ready = true;
      try {
        await setup(model);
      } catch (error) {
        ready = false;
        this.current = undefined;
        await model.close().catch(() => undefined);
        if (!this.connectedOnce) {
          this.emit('startup-failed', error);
          return;
        }
        this.logger.error(
          `${label}: setting up after reconnect failed: ${errorMessage(error)}; reconnecting`,
        );
      }
      if (ready && this.current === model) {
        failures = 0;
        this.connectedOnce = true;
        this.logger.log(`${label}: connected to ${redactUrl(url)}`);
        this.emit('connected', model);
        await closed;
      }
      this.current = undefined;
      this.setBlocked(false);
      if (this.closing.signal.aborted) return;
      this.emit('disconnected');
      failures++;
      const delay = fullJitterDelay(
        failures,
        this.options.reconnect.initialDelayMs,
        this.options.reconnect.maxDelayMs,
      );
      this.logger.warn(`${label}: connection to ${redactUrl(url)} lost; reconnecting in ${delay} ms`);
      await sleep(delay, this.closing.signal);
    }
  }

  private setBlocked(blocked: boolean): void {
    if (blocked && this.blockedSince === undefined) {
      this.blockedSince = performance.now();
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      this.unblock = { promise, resolve };
    } else if (!blocked && this.blockedSince !== undefined) {
      this.blockedBefore += performance.now() - this.blockedSince;
      this.blockedSince = undefined;
      this.unblock?.resolve();
      this.unblock = undefined;
    }
  }

  private withHeartbeat(url: string): string {
    const parsed = new URL(url);
    if (!parsed.searchParams.has('heartbeat'))
      parsed.searchParams.set('heartbeat', String(this.options.heartbeatSeconds));
    return parsed.toString();
  }
}
