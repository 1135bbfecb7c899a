import { hostname } from 'node:os';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { DEAD_LETTER_HEADERS, HEADERS, RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { withDeclarationChannel } from '../amqp/declaration-channel';
import { TopologyService } from '../amqp/topology.service';
import { deadLetterQueueArguments } from '../dead-letter/dead-letter-queue';
import { withoutBrokerHeaders } from '../envelope/broker-headers';
import { republish } from '../envelope/republish';
import { UnroutableMessageError } from '../errors/publish.error';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import { deliverExchangeName } from '../retry/delay-levels';
import { fullJitterDelay, sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';
import {
  delayTarget,
  deliveredHeaders,
  judgeDelayed,
  republishQueueName,
  SCHEDULED_HOPS_HEADER,
  type ScheduledRefusal,
} from './broker-delay';

/** Messages the republisher holds at once: each is one publish and its confirm. */
const PREFETCH = 100;
/** The handler name a refused message's dead letter records. */
const HANDLER = 'scheduled-republisher';
const BACKOFF_BASE_MS = 200;
const BACKOFF_CAP_MS = 5_000;
/** How long shutdown waits for held messages to be given back once it stopped their publishes. */
const GIVE_BACK_MS = 1_000;

/** What health reports of the republisher. */
export interface RepublisherStatus {
  queue: string;
  consuming: boolean;
  inFlight: number;
}

/**
 * The consumer of the republish queue (`<exchange>.scheduled`, `scheduling.brokerDelays`): every scheduled message
 * that comes out of the delay levels is checked (judgeDelayed) and then sent to its destination with a confirm,
 * sent back into the levels when it came out before its due time, or dead-lettered to `<exchange>.scheduled.dlq`
 * with its reason. It is acknowledged only after that publish is confirmed, so a crash in between sends it twice
 * rather than losing it (consumers' inboxes drop the copy). A failed publish (the broker refusing, the publisher
 * connection down) is not the message's fault: it is held and tried again with backoff, never dead-lettered, and
 * given back to the queue at shutdown. MessagingLifecycle declares its queue with the topology, starts it with the
 * consumers and stops it with them.
 */
@Injectable()
export class ScheduledRepublisher {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly host = hostname();
  private channel?: Channel;
  private consumerTag?: string;
  private readonly inFlight = new Set<Promise<void>>();
  private stopping = new AbortController();

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly publisher: ConfirmPublisher,
    private readonly topology: TopologyService,
    private readonly metrics: MessagingMetrics,
  ) {}

  /** True when scheduled messages go through the broker's delay levels (`scheduling.brokerDelays`). */
  get enabled(): boolean {
    return this.options.scheduling.brokerDelays;
  }

  /** The republish queue's name. */
  get queue(): string {
    return republishQueueName(this.options.exchange);
  }

  get status(): RepublisherStatus {
    return { queue: this.queue, consuming: this.consumerTag !== undefined, inFlight: this.inFlight.size };
  }

  /**
   * Declares the republish queue, its dead-letter queue and its binding to the delay levels' deliver exchange;
   * run on every consumer connection after the levels, also where this process does not consume, so that no
   * scheduled message comes out of the levels into nothing.
   */
  async declare(model: ChannelModel): Promise<void> {
    const queue = this.queue;
    const { deadLetterExchange, defaultQueueType } = this.options;
    await withDeclarationChannel(model, async (channel) => {
      await channel.assertExchange(deadLetterExchange, 'direct', { durable: true });
      await channel.assertQueue(`${queue}.dlq`, {
        durable: true,
        arguments: deadLetterQueueArguments(defaultQueueType),
      });
      await channel.bindQueue(`${queue}.dlq`, deadLetterExchange, queue);
      await channel.assertQueue(queue, {
        durable: true,
        arguments: this.topology.queueArguments(queue, defaultQueueType),
      });
      await channel.bindQueue(queue, deliverExchangeName(this.options.exchange), '', {
        'x-match': 'all',
        [HEADERS.retryQueue]: queue,
      });
    });
  }

  /** Subscribes to the republish queue on a channel of `model`; run after every consumer connection. */
  async start(model: ChannelModel): Promise<void> {
    this.stopping = new AbortController();
    const channel = await model.createChannel();
    channel.on('error', (error: Error) =>
      this.logger.warn(`scheduled republisher channel error: ${errorMessage(error)}`),
    );
    channel.once('close', () => {
      if (this.channel === channel) {
        this.channel = undefined;
        this.consumerTag = undefined;
      }
    });
    await channel.prefetch(PREFETCH);
    this.channel = channel;
    const { consumerTag } = await channel.consume(this.queue, (message) => {
      if (!message) {
        this.logger.warn(`the broker cancelled the scheduled republisher's subscription to ${this.queue}`);
        this.consumerTag = undefined;
        return;
      }
      const work = this.handle(channel, message).finally(() => this.inFlight.delete(work));
      this.inFlight.add(work);
    });
    this.consumerTag = consumerTag;
  }

  /**
   * Cancels the subscription, waits for the messages in hand until `deadline` (those still failing to publish
   * are given back to the queue), then closes the channel, which returns whatever is left.
   */
  async stop(deadline: number): Promise<void> {
    const channel = this.channel;
    const tag = this.consumerTag;
    this.consumerTag = undefined;
    if (channel && tag) await channel.cancel(tag).catch(() => undefined);
    const settled = Promise.all([...this.inFlight]);
    await settledBefore(settled, Math.max(0, deadline - Date.now()));
    this.stopping.abort();
    await settledBefore(settled, GIVE_BACK_MS);
    this.channel = undefined;
    if (channel) await channel.close().catch(() => undefined);
  }

  private async handle(channel: Channel, message: ConsumeMessage): Promise<void> {
    const now = Date.now();
    const verdict = judgeDelayed(message, now, {
      exchange: this.options.exchange,
      maxDelayMs: this.options.scheduling.maxDelayMs,
    });
    const headers = withoutBrokerHeaders(message.properties.headers);
    let outcome: 'delivered' | 'waiting' | 'dead-lettered';
    let send: () => Promise<void>;
    if (verdict.kind === 'deliver') {
      outcome = 'delivered';
      send = async () => {
        try {
          await this.publisher.publish(this.delivered(message, verdict, headers));
          this.metrics.scheduledLateness.observe(Math.max(0, Date.now() - verdict.dueAt) / 1000);
        } catch (error) {
          if (!(error instanceof UnroutableMessageError)) throw error;
          outcome = 'dead-lettered';
          await this.deadLetter(message, headers, 'scheduled-unroutable', errorMessage(error));
        }
      };
    } else if (verdict.kind === 'wait') {
      outcome = 'waiting';
      send = () =>
        this.publisher.publish(
          republish(message, delayTarget(this.options.exchange, verdict.remainingMs), {
            ...headers,
            [SCHEDULED_HOPS_HEADER]: verdict.hops,
          }),
        );
    } else {
      outcome = 'dead-lettered';
      this.logger.warn(
        `scheduled message ${String(message.properties.messageId)} refused (${verdict.reason}): ${verdict.detail}`,
      );
      send = () => this.deadLetter(message, headers, verdict.reason, verdict.detail);
    }
    try {
      if (await this.whileHeld(channel, send)) {
        channel.ack(message);
        this.metrics.scheduledRepublished.inc({ outcome });
      } else if (this.channel === channel) {
        channel.nack(message, false, true);
      }
    } catch {
      // The channel closed after the publish: the broker redelivers the message, and its copy is sent again.
    }
  }

  /** The message as it goes to its destination: its own headers, its due time kept, sent now. */
  private delivered(
    message: ConsumeMessage,
    target: { exchange: string; routingKey: string },
    headers: Record<string, unknown>,
  ) {
    const outbound = republish(message, target, deliveredHeaders(headers));
    // As for an outbox message promoted when due: the timestamp is the send, for the queue-age metric.
    outbound.properties.timestamp = Math.floor(Date.now() / 1000);
    return outbound;
  }

  /** Publishes a refused message to the republish queue's dead-letter queue, with why, in the module's headers. */
  private async deadLetter(
    message: ConsumeMessage,
    headers: Record<string, unknown>,
    reason: ScheduledRefusal,
    detail: string,
  ): Promise<void> {
    const now = new Date().toISOString();
    const claimedExchange = headers[HEADERS.originalExchange];
    const claimedRoutingKey = headers[HEADERS.originalRoutingKey];
    const dead: Record<string, unknown> = { ...headers };
    delete dead[HEADERS.retryQueue];
    Object.assign(dead, {
      [DEAD_LETTER_HEADERS.reason]: reason,
      [DEAD_LETTER_HEADERS.errorClass]: 'ScheduledMessageRefused',
      [DEAD_LETTER_HEADERS.errorMessage]: detail.slice(0, 1000),
      [DEAD_LETTER_HEADERS.errorStack]: '',
      [DEAD_LETTER_HEADERS.queue]: this.queue,
      [DEAD_LETTER_HEADERS.exchange]: typeof claimedExchange === 'string' ? claimedExchange : '',
      [DEAD_LETTER_HEADERS.routingKey]: typeof claimedRoutingKey === 'string' ? claimedRoutingKey : '',
      [DEAD_LETTER_HEADERS.handler]: HANDLER,
      [DEAD_LETTER_HEADERS.attempts]: 1,
      [DEAD_LETTER_HEADERS.firstFailureAt]: now,
      [DEAD_LETTER_HEADERS.lastFailureAt]: now,
      [DEAD_LETTER_HEADERS.host]: this.host,
      [DEAD_LETTER_HEADERS.count]: 1,
    });
    await this.publisher.publish(
      republish(message, { exchange: this.options.deadLetterExchange, routingKey: this.queue }, dead),
    );
  }

  /**
   * Runs `send` until it succeeds: a broker that cannot take the publish now (down, blocked, refusing) is not the
   * message's fault. False when shutdown or the loss of the message's channel came first; the message then goes
   * back to its queue (the broker has it back already when its channel closed).
   */
  private async whileHeld(channel: Channel, send: () => Promise<void>): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await send();
        return true;
      } catch (error) {
        if (this.stopping.signal.aborted || this.channel !== channel) return false;
        if (attempt === 1) {
          this.logger.warn(`scheduled republisher: publish failed (${errorMessage(error)}); trying again`);
        }
        await sleep(
          fullJitterDelay(attempt, BACKOFF_BASE_MS, BACKOFF_CAP_MS) + BACKOFF_BASE_MS,
          this.stopping.signal,
        );
        if (this.stopping.signal.aborted || this.channel !== channel) return false;
      }
    }
  }
}

/** Waits for `work`, at most `ms`, leaving no timer behind. */
async function settledBefore(work: Promise<unknown>, ms: number): Promise<void> {
  const timer = new AbortController();
  await Promise.race([work, sleep(ms, timer.signal)]);
  timer.abort();
}
