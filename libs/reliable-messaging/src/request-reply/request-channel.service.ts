import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ConfirmChannel, ConsumeMessage, Message } from 'amqplib';
import { PublisherConnection } from '../amqp/publisher-connection.service';
import type { OutboundMessage } from '../envelope/envelope';
import { PublishError, PublishRejectedError, UnroutableMessageError } from '../errors/publish.error';
import { traceSend } from '../tracing/messaging-tracer';
import { errorMessage } from '../util/error-text';
import { PendingRequests, type RequestDescription } from './pending-requests';
import { DIRECT_REPLY_TO, readReply } from './reply-message';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { withOrderingBucket } from '../ordering/ordering-bucket';

/** A reply channel and the requests sent on it, whose replies can only come back on it. */
interface ReplyChannel {
  channel: ConfirmChannel;
  pending: PendingRequests;
}

/**
 * Sends requests and receives their replies through RabbitMQ's direct reply-to, on a channel of its own on the
 * publisher connection, opened by the first request (and again by the first after it closed). The channel
 * consumes `amq.rabbitmq.reply-to` (no-ack) before anything is published on it, as the broker requires, and
 * every request is published on it with that `replyTo`, `mandatory` (a request no queue is bound for fails at
 * once with UnroutableMessageError) and with a broker confirm. Replies are matched by correlation id, the
 * request's message id. When the channel closes (the connection dropped, the app shut down) the replies of its
 * requests can no longer arrive, so each of them fails at once with RequestInterruptedError.
 */
@Injectable()
export class RequestChannel {
  private readonly logger = new Logger('ReliableMessaging');
  private opening?: Promise<ReplyChannel>;
  /** The open reply channel; a request waiting for `opening` gets it. */
  private current?: ReplyChannel;

  constructor(
    private readonly connection: PublisherConnection,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  /**
   * Publishes `message` as a request and resolves with its reply's value; the timeout runs from this call. The
   * request expires in the broker after `timeoutMs`, so it is not handled after its caller stopped waiting.
   */
  async request(message: OutboundMessage, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    const started = performance.now();
    const request: RequestDescription = {
      messageId: message.properties.messageId,
      messageType: message.properties.type ?? message.routingKey,
      exchange: message.exchange,
      routingKey: message.routingKey,
      timeoutMs,
    };
    signal?.throwIfAborted();
    const { channel, pending } = await this.ready();
    const reply = pending.wait(request, signal, timeoutMs - (performance.now() - started));
    traceSend(message, () => this.send(channel, message, timeoutMs)).catch((error: unknown) =>
      pending.fail(request.messageId, error),
    );
    return reply;
  }

  private send(channel: ConfirmChannel, message: OutboundMessage, timeoutMs: number): Promise<void> {
    const id = message.properties.messageId;
    return new Promise<void>((resolve, reject) => {
      try {
        // Not persistent: a broker restart loses the caller's reply channel too, so the request could never be answered.
        channel.publish(
          message.exchange,
          message.routingKey,
          message.body,
          {
            ...withOrderingBucket(message.properties),
            replyTo: DIRECT_REPLY_TO,
            expiration: String(timeoutMs),
            mandatory: true,
            persistent: false,
          },
          (error: unknown) => {
            if (!error) resolve();
            else if (/nack/i.test(errorMessage(error)))
              reject(new PublishRejectedError(`broker refused request ${id}`));
            else reject(new PublishError(`publish of request ${id} failed: ${errorMessage(error)}`));
          },
        );
      } catch (error) {
        reject(new PublishError(`publish of request ${id} failed: ${errorMessage(error)}`));
      }
    });
  }

  private ready(): Promise<ReplyChannel> {
    const opening = (this.opening ??= this.open().catch((error: unknown) => {
      this.opening = undefined;
      throw error;
    }));
    return opening;
  }

  private async open(): Promise<ReplyChannel> {
    const model = this.connection.model;
    if (!model) throw new PublishError(`not connected to the broker at ${this.connection.redactedUrl}`);
    let channel: ConfirmChannel;
    try {
      channel = await model.createConfirmChannel();
    } catch (error) {
      throw new PublishError(`could not open the request channel: ${errorMessage(error)}`);
    }
    const pending = new PendingRequests();
    const opened: ReplyChannel = { channel, pending };
    let closeReason: string | undefined;
    channel.on('error', (error: Error) => {
      closeReason = errorMessage(error);
      this.logger.warn(`request channel error: ${closeReason}`);
    });
    channel.on('return', (returned: Message) => this.onReturn(pending, returned));
    channel.once('close', () => {
      if (this.current === opened) {
        this.current = undefined;
        this.opening = undefined;
      }
      const reason = `the reply channel closed (${closeReason ?? 'the publisher connection closed or the app is shutting down'})`;
      const interrupted = pending.interruptAll(reason);
      if (interrupted > 0) this.logger.warn(`${interrupted} request(s) in flight interrupted: ${reason}`);
    });
    try {
      await channel.consume(DIRECT_REPLY_TO, (reply) => this.onReply(pending, reply), { noAck: true });
    } catch (error) {
      await channel.close().catch(() => undefined);
      throw new PublishError(`could not consume ${DIRECT_REPLY_TO}: ${errorMessage(error)}`);
    }
    this.current = opened;
    return opened;
  }

  private onReply(pending: PendingRequests, reply: ConsumeMessage | null): void {
    if (!reply) return;
    const correlationId = reply.properties.correlationId as string | undefined;
    const settled =
      correlationId !== undefined &&
      pending.settle(correlationId, (request) =>
        readReply(reply, request.messageType, this.options.jsonLimits),
      );
    if (!settled) {
      this.logger.debug(
        `a reply (correlation id ${correlationId ?? 'none'}) came for no waiting request: it timed out or was abandoned`,
      );
    }
  }

  private onReturn(pending: PendingRequests, returned: Message): void {
    const id = returned.properties.messageId as string | undefined;
    const fields = returned.fields as unknown as {
      exchange?: string;
      routingKey?: string;
      replyCode?: number;
      replyText?: string;
    };
    if (id === undefined) return;
    pending.fail(
      id,
      new UnroutableMessageError(
        fields.exchange ?? '',
        fields.routingKey ?? '',
        `${fields.replyCode ?? ''} ${fields.replyText ?? 'returned'}`.trim() +
          ': no queue is bound for this request, so no responder can answer it',
      ),
    );
  }
}
