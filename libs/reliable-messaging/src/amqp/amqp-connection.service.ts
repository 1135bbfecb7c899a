import { EventEmitter } from 'node:events';
import { Inject, Injectable, Logger } from '@nestjs/common';
import * as amqp from 'amqplib';
import type { ChannelModel } from 'amqplib';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import { fullJitterDelay, sleep } from '../util/backoff';
import { redactUrl } from '../util/redact-url';
import { errorMessage } from '../util/error-text';

/** Runs after every (re)connection, in registration order: topology first, then publishers and consumers. */
export type ConnectHook = (model: ChannelModel) => Promise<void>;

/**
 * The one AMQP connection of the process and its recovery. When the connection drops it reconnects with
 * exponential backoff and full jitter, trying each configured URL in turn, then runs the connect hooks again
 * (declare topology, reopen the publisher channel, resubscribe consumers). Errors are logged, never thrown
 * into the event loop.
 */
@Injectable()
export class AmqpConnection extends EventEmitter {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly hooks: ConnectHook[] = [];
  private current?: ChannelModel;
  private readonly closing = new AbortController();
  private loop?: Promise<void>;
  private urlIndex = 0;
  private blocked = false;
  private connectedOnce = false;

  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {
    super();
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

  /** True while the broker has blocked publishing (a memory or disk alarm). */
  get isBlocked(): boolean {
    return this.blocked;
  }

  /** The broker address in use, without credentials. */
  get redactedUrl(): string {
    return redactUrl(this.options.urls[this.urlIndex % this.options.urls.length]);
  }

  /** Adds a hook run after every successful connection, including one already open. */
  onConnect(hook: ConnectHook): void {
    this.hooks.push(hook);
  }

  /** Connects, runs the hooks once, and keeps the connection up until `close()`. Fails if the first connection and its hooks don't succeed within the startup timeout. */
  async start(): Promise<void> {
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
    this.loop = this.run();
    try {
      await firstConnection;
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /** Closes the connection and stops reconnecting. */
  async close(): Promise<void> {
    this.closing.abort();
    const model = this.current;
    this.current = undefined;
    if (model) {
      await model.close().catch(() => undefined);
    }
    await this.loop?.catch(() => undefined);
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.closing.signal.aborted) {
      const url = this.options.urls[this.urlIndex % this.options.urls.length];
      let model: ChannelModel;
      try {
        model = await amqp.connect(this.withHeartbeat(url), {
          ...this.options.tls,
          clientProperties: { connection_name: this.options.connectionName },
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
          `connection to ${redactUrl(url)} failed (${errorMessage(error)}); retrying in ${delay} ms`,
        );
        await sleep(delay, this.closing.signal);
        continue;
      }
      const closed = new Promise<void>((resolve) =>
        model.once('close', () => {
          if (this.current === model) this.current = undefined;
          resolve();
        }),
      );
      model.on('error', (error: Error) => this.logger.warn(`connection error: ${error.message}`));
      model.on('blocked', (reason: string) => {
        this.blocked = true;
        this.logger.warn(`broker blocked publishing: ${reason}`);
      });
      model.on('unblocked', () => {
        this.blocked = false;
        this.logger.log('broker unblocked publishing');
      });
      this.current = model;
      let ready = true;
      try {
        for (const hook of this.hooks) await hook(model);
      } catch (error) {
        ready = false;
        this.current = undefined;
        await model.close().catch(() => undefined);
        if (!this.connectedOnce) {
          this.emit('startup-failed', error);
          return;
        }
        this.logger.error(`setting up after reconnect failed: ${errorMessage(error)}; reconnecting`);
      }
      if (ready && this.current === model) {
        failures = 0;
        this.connectedOnce = true;
        this.logger.log(`connected to ${redactUrl(url)}`);
        this.emit('connected', model);
        await closed;
      }
      this.current = undefined;
      this.blocked = false;
      if (this.closing.signal.aborted) return;
      this.emit('disconnected');
      failures++;
      const delay = fullJitterDelay(
        failures,
        this.options.reconnect.initialDelayMs,
        this.options.reconnect.maxDelayMs,
      );
      this.logger.warn(`connection to ${redactUrl(url)} lost; reconnecting in ${delay} ms`);
      await sleep(delay, this.closing.signal);
    }
  }

  private withHeartbeat(url: string): string {
    const parsed = new URL(url);
    if (!parsed.searchParams.has('heartbeat'))
      parsed.searchParams.set('heartbeat', String(this.options.heartbeatSeconds));
    return parsed.toString();
  }
}
