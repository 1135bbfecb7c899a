import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { ChannelModel, ConfirmChannel, Message } from 'amqplib';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { OutboundMessage } from '../envelope/envelope';
import {
  PublishError,
  PublishRejectedError,
  PublishTimeoutError,
  UnroutableMessageError,
} from '../errors/publish.error';
import { errorMessage } from '../util/error-text';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import { traceSend } from '../tracing/messaging-tracer';
import { PublisherConnection } from './publisher-connection.service';
import { withOrderingBucket } from '../ordering/ordering-bucket';

/** Refusals in a row, with no confirm between them, after which the channel is suspected and replaced. */
const REFUSALS_BEFORE_REOPEN = 20;
/** How long a run of refusals must last, and how long at least between two replacements. */
const REOPEN_INTERVAL_MS = 1_000;

/** How a message is published: persistent and `mandatory` by default; replies are neither. */
export interface PublishMode {
  persistent: boolean;
  mandatory: boolean;
}

const DURABLE: PublishMode = { persistent: true, mandatory: true };

/**
 * Lets a caller send several messages in order on one channel without waiting for each confirm: it starts the
 * next publish once the previous one was written.
 */
export interface InOrder {
  /** The channel the sequence went out on so far: on another one the publish fails unsent (ChannelChangedError). */
  channel?: ConfirmChannel;
  /** Called once the message is written to `channel`, before its confirm. */
  written(channel: ConfirmChannel): void;
}

/**
 * The publisher channel was replaced in the middle of an ordered sequence: the message was not sent, since the
 * broker keeps the order of publishes only within one channel.
 */
export class ChannelChangedError extends PublishError {
  override readonly name = 'ChannelChangedError';
}

interface Pending {
  messageId: string;
  returned?: string;
}

/**
 * Publishes on a confirm channel of the publisher connection: persistent, `mandatory`, and resolved only when
 * the broker confirms. An unroutable message (returned by the broker before its confirm) rejects with
 * UnroutableMessageError; a missing confirm rejects after the timeout; when the channel closes every pending
 * confirm rejects. Writes wait for 'drain' when the socket buffer is full, and while the broker blocks the
 * connection (a memory or disk alarm), so nothing piles up in memory; the confirm timeout does not run while
 * the connection is blocked, so a publish outlasts an alarm that clears.
 */
@Injectable()
export class ConfirmPublisher {
  private readonly logger = new Logger('ReliableMessaging');
  private channel?: ConfirmChannel;
  private opening?: Promise<ConfirmChannel>;
  private drained: Promise<void> = Promise.resolve();
  /** True from a write the socket buffer could not take until 'drain': `drained` is pending meanwhile. */
  private draining = false;
  private readonly pendingById = new Map<string, Pending[]>();
  /** Why the broker closed a channel (e.g. a publish to a missing exchange), for the errors of its pending publishes. */
  private readonly closeReasons = new WeakMap<ConfirmChannel, string>();
  /** The current run of refusals (nacks) with no confirm between them. */
  private refusals?: { since: number; count: number };
  private lastReopenAt = 0;

  constructor(
    private readonly connection: PublisherConnection,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    @Optional() private readonly metrics?: MessagingMetrics,
  ) {}

  /** Opens the confirm channel on a fresh publisher connection; run after every (re)connection. */
  async attach(model: ChannelModel): Promise<void> {
    this.channel = undefined;
    this.opening = undefined;
    await this.open(model);
  }

  /**
   * True while a confirm channel is open, or the publisher connection is up so that a publish opens one (after a
   * channel was replaced, say). The outbox relay publishes only while this holds.
   */
  get isReady(): boolean {
    return this.channel !== undefined || this.connection.model !== undefined;
  }

  /** True while a confirm channel is open: a publish that failed meanwhile lost its channel, not the broker's favour. */
  get hasChannel(): boolean {
    return this.channel !== undefined;
  }

  /**
   * Publishes and waits for the broker's confirm, in a `send <exchange>` span; the time to the confirm is
   * recorded in `rm_publish_confirm_duration_seconds`, by outcome. `mode` is for replies to requests, which
   * go to a direct reply-to name: persistence means nothing there, and RabbitMQ returns a `mandatory` one as
   * unroutable even when it delivers it (seen on 3.10).
   */
  async publish(message: OutboundMessage, mode: PublishMode = DURABLE, inOrder?: InOrder): Promise<void> {
    const started = performance.now();
    let outcome = 'confirmed';
    try {
      await traceSend(message, () => this.send(message, mode, inOrder));
    } catch (error) {
      outcome = error instanceof Error ? error.name : 'Error';
      throw error;
    } finally {
      this.metrics?.publishConfirmDuration.observe(
        { exchange: message.exchange, outcome },
        (performance.now() - started) / 1000,
      );
    }
  }

  /**
   * Writes the message and resolves on its confirm. While the channel is open, the connection unblocked and the
   * socket buffer not full (the common case) the message is written before this returns, so that a caller sending
   * a sequence in order (InOrder) can go on at once; otherwise it waits for them first.
   */
  private send(message: OutboundMessage, mode: PublishMode, inOrder?: InOrder): Promise<void> {
    const channel = this.channel;
    if (channel && !this.draining && !this.connection.isBlocked)
      return this.write(channel, message, mode, inOrder);
    return this.sendWhenReady(message, mode, inOrder);
  }

  private async sendWhenReady(message: OutboundMessage, mode: PublishMode, inOrder?: InOrder): Promise<void> {
    await this.whileBlocked(message.properties.messageId);
    const channel = await this.ready();
    await this.drained;
    return this.write(channel, message, mode, inOrder);
  }

  private async write(
    channel: ConfirmChannel,
    message: OutboundMessage,
    mode: PublishMode,
    inOrder?: InOrder,
  ): Promise<void> {
    if (inOrder?.channel !== undefined && inOrder.channel !== channel) {
      throw new ChannelChangedError(
        `message ${message.properties.messageId} not sent: the publisher channel changed during its ordered sequence`,
      );
    }
    const pending: Pending = { messageId: message.properties.messageId };
    this.track(pending);
    try {
      await new Promise<void>((resolve, reject) => {
        const clearTimer = this.confirmTimer(() =>
          reject(
            new PublishTimeoutError(
              `no confirm for message ${pending.messageId} within ${this.options.publishConfirmTimeoutMs} ms`,
            ),
          ),
        );
        let writable: boolean;
        try {
          writable = channel.publish(
            message.exchange,
            message.routingKey,
            message.body,
            { ...withOrderingBucket(message.properties), ...mode },
            (error: unknown) => {
              clearTimer();
              const refused = error instanceof Error && /nack/i.test(error.message);
              if (refused || !error) this.noteOutcome(channel, refused);
              if (error) {
                reject(
                  refused
                    ? new PublishRejectedError(`broker refused message ${pending.messageId}`)
                    : new PublishError(
                        `publish of message ${pending.messageId} failed: ${this.failureText(channel, error)}`,
                      ),
                );
              } else if (pending.returned !== undefined) {
                reject(new UnroutableMessageError(message.exchange, message.routingKey, pending.returned));
              } else {
                resolve();
              }
            },
          );
        } catch (error) {
          clearTimer();
          reject(new PublishError(`publish of message ${pending.messageId} failed: ${errorMessage(error)}`));
          return;
        }
        inOrder?.written(channel);
        if (!writable) this.waitForDrain(channel);
      });
    } finally {
      this.untrack(pending);
    }
  }

  /** Holds later writes until `channel` drains its socket buffer, or closes. */
  private waitForDrain(channel: ConfirmChannel): void {
    this.draining = true;
    this.drained = new Promise<void>((resume) => {
      const done = (): void => {
        channel.off('drain', done);
        channel.off('close', done);
        this.draining = false;
        resume();
      };
      channel.once('drain', done);
      channel.once('close', done);
    });
  }

  /**
   * Replaces the channel after a long run of refusals. A full queue that rejects publishes refuses on any
   * channel, and then a new one costs little; but after a quorum queue's leader is lost, RabbitMQ can keep
   * refusing every publish on a channel that had routed to it while a new channel is accepted (seen on a 3-node
   * 3.10 cluster after SIGKILL of the leader). At most one replacement per interval.
   */
  private noteOutcome(channel: ConfirmChannel, refused: boolean): void {
    if (!refused) {
      this.refusals = undefined;
      return;
    }
    const now = Date.now();
    const run = (this.refusals ??= { since: now, count: 0 });
    run.count++;
    if (
      run.count < REFUSALS_BEFORE_REOPEN ||
      now - run.since < REOPEN_INTERVAL_MS ||
      now - this.lastReopenAt < REOPEN_INTERVAL_MS ||
      this.channel !== channel
    ) {
      return;
    }
    this.logger.warn(
      `the broker refused ${run.count} publishes in a row over ${now - run.since} ms; opening a new publisher channel`,
    );
    this.lastReopenAt = now;
    this.refusals = undefined;
    this.channel = undefined;
    this.opening = undefined;
    channel.close().catch(() => undefined);
    // Opened now rather than by the next publish, so that nobody waits on a channel that is not there.
    this.ready().catch((error: unknown) =>
      this.logger.warn(`opening a new publisher channel failed: ${errorMessage(error)}`),
    );
  }

  /**
   * Waits while the broker blocks the publisher connection: it reads nothing from the socket then, so a write
   * would only sit in memory. Fails when the connection closes first (shutdown, or the broker went away).
   */
  private async whileBlocked(messageId: string): Promise<void> {
    if (!this.connection.isBlocked) return;
    while (this.connection.isBlocked) await this.connection.whenUnblocked();
    if (!this.connection.isConnected) {
      throw new PublishError(
        `publish of message ${messageId} failed: the publisher connection closed while the broker blocked publishing`,
      );
    }
  }

  /**
   * Calls `expire` once the broker has taken `publishConfirmTimeoutMs` to confirm, not counting the time the
   * publisher connection spent blocked: an alarm holds confirms back for as long as it lasts. Returns a function
   * that cancels it.
   */
  private confirmTimer(expire: () => void): () => void {
    const limit = this.options.publishConfirmTimeoutMs;
    const started = performance.now();
    const blockedAtStart = this.connection.blockedMs;
    let cancelled = false;
    let timer: NodeJS.Timeout | undefined;
    const check = (): void => {
      if (cancelled) return;
      if (this.connection.isBlocked) {
        void this.connection.whenUnblocked().then(check);
        return;
      }
      const waited = performance.now() - started - (this.connection.blockedMs - blockedAtStart);
      if (waited >= limit) expire();
      else timer = setTimeout(check, limit - waited);
    };
    timer = setTimeout(check, limit);
    return () => {
      cancelled = true;
      clearTimeout(timer);
    };
  }

  private async ready(): Promise<ConfirmChannel> {
    if (this.channel) return this.channel;
    const model = this.connection.model;
    if (!model) throw new PublishError('not connected to the broker; reconnecting');
    return this.open(model);
  }

  private open(model: ChannelModel): Promise<ConfirmChannel> {
    this.opening ??= (async () => {
      const channel = await model.createConfirmChannel();
      channel.on('error', (error: Error) => {
        this.closeReasons.set(channel, errorMessage(error));
        this.logger.warn(`publisher channel error: ${errorMessage(error)}`);
      });
      channel.on('return', (returned: Message) => this.onReturn(returned));
      channel.once('close', () => {
        if (this.channel === channel) {
          this.channel = undefined;
          this.opening = undefined;
        }
      });
      this.channel = channel;
      return channel;
    })().catch((error: unknown) => {
      this.opening = undefined;
      throw new PublishError(`could not open a publisher channel: ${errorMessage(error)}`);
    });
    return this.opening;
  }

  /** A failed publish's error, with the reason the broker gave for closing the channel when it gave one. */
  private failureText(channel: ConfirmChannel, error: unknown): string {
    const reason = this.closeReasons.get(channel);
    return reason ? `${errorMessage(error)} (${reason})` : errorMessage(error);
  }

  private onReturn(returned: Message): void {
    const id = returned.properties.messageId as string | undefined;
    const pending = id ? this.pendingById.get(id)?.find((p) => p.returned === undefined) : undefined;
    if (pending) {
      const fields = returned.fields as unknown as { replyCode?: number; replyText?: string };
      pending.returned = `${fields.replyCode ?? ''} ${fields.replyText ?? 'returned'}`.trim();
    } else {
      this.logger.warn(
        `an unroutable message came back with no publish waiting for it (message ${id ?? 'without id'})`,
      );
    }
  }

  private track(pending: Pending): void {
    const list = this.pendingById.get(pending.messageId);
    if (list) list.push(pending);
    else this.pendingById.set(pending.messageId, [pending]);
  }

  private untrack(pending: Pending): void {
    const list = this.pendingById.get(pending.messageId);
    if (!list) return;
    const index = list.indexOf(pending);
    if (index >= 0) list.splice(index, 1);
    if (list.length === 0) this.pendingById.delete(pending.messageId);
  }
}
