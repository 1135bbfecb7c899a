import { Injectable } from '@nestjs/common';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { ClaimCheckWriter } from '../claim-check/claim-check-writer.service';
import type { OutboundMessage } from '../envelope/envelope';
import { EnvelopeFactory } from '../envelope/envelope.factory';
import { ConfigurationError } from '../errors/configuration.error';
import { PublishTimeoutError } from '../errors/publish.error';
import { OutboxWriter } from '../outbox/outbox-writer.service';
import { BrokerDelayWriter } from '../scheduling/broker-delay-writer.service';
import { scheduledDelivery } from '../scheduling/scheduled-delivery';
import { ScheduledWriter } from '../scheduling/scheduled-writer.service';
import { RequestChannel } from '../request-reply/request-channel.service';
import { requestTimeout, type RequestOptions } from '../request-reply/request-options';
import type { PublishOptions } from './publish-options';

/** The result of a publish: the id the message got. */
export interface PublishReceipt {
  messageId: string;
}

/**
 * Publishes messages with the full envelope. `publish()` is the default path: with the module's `dataSource`
 * it writes the message to the outbox in the caller's transaction, and the relay sends it after the commit;
 * without a `dataSource` it sends at once like `publishNow()`. `publishNow()` sends at once with a broker
 * confirm, outside any transaction. `request()` sends a request and waits for its reply (docs/request-reply.md).
 */
@Injectable()
export class MessagePublisher {
  constructor(
    private readonly envelopes: EnvelopeFactory,
    private readonly confirms: ConfirmPublisher,
    private readonly outbox: OutboxWriter,
    private readonly requests: RequestChannel,
    private readonly claimChecks: ClaimCheckWriter,
    private readonly scheduled: ScheduledWriter,
    private readonly brokerDelays: BrokerDelayWriter,
  ) {}

  /**
   * Publishes a `@MessageType()` instance (or `{ type, payload }`). With a `dataSource`: writes it to the outbox
   * in `options.manager`'s transaction, else in the current one (nestjs-cls' `@Transactional()`, or the handler's
   * with dedup on), and throws NoTransactionError outside any transaction; it is sent once that transaction
   * commits, and never if it rolls back. Without a `dataSource`: sends at once and waits for the confirm.
   *
   * With `deliverAt` or `delayMs` (docs/scheduling.md) the message is written to the scheduled messages table in
   * that transaction instead, and sent when due; the receipt's `messageId` cancels it until then
   * (`ScheduledMessages.cancel()`). Throws a ConfigurationError when both are given or either is invalid.
   * Without a `dataSource`, with `scheduling.brokerDelays` on, it goes into the broker's delay levels at once and
   * resolves on the broker's confirm; it cannot be cancelled, and a delay above `scheduling.maxDelayMs` throws a
   * ConfigurationError. Without either, a scheduled publish throws a ConfigurationError, but under the testing
   * module, which holds it for the harness's clock.
   */
  async publish(message: object, options: PublishOptions = {}): Promise<PublishReceipt> {
    const [receipt] = await this.publishAll([message], options);
    return receipt;
  }

  /**
   * Publishes several messages like `publish()`, in their order. Every envelope is built (keys checked, size
   * limited) before anything is written or sent, so one message that cannot be sent publishes none. With a
   * `dataSource` their outbox rows are written with one statement, whatever their number; without one they are
   * sent one after the other, each confirmed before the next (a refusal part-way rejects the call with the earlier
   * ones sent; resending the batch is safe, their keys deduplicate). The options apply to every message, an
   * `orderingKey` included (the batch is then ordered as one key). Each message's idempotency key is its own, from
   * its class or its `{ type, payload, idempotencyKey }`: an `options.idempotencyKey` with more than one message
   * throws a ConfigurationError, since consumers deduplicating on a shared key would apply only one of them.
   */
  async publishAll(messages: readonly object[], options: PublishOptions = {}): Promise<PublishReceipt[]> {
    if (messages.length > 1 && options.idempotencyKey !== undefined) {
      throw new ConfigurationError(
        `publishAll() was given ${messages.length} messages and one idempotencyKey ('${options.idempotencyKey}') ` +
          'for all of them: a consumer deduplicating on it would apply only the first. Give each message its own ' +
          'key, in @MessageType() or on the { type, payload, idempotencyKey } message',
      );
    }
    const type = describeType(messages[0] ?? {});
    const delivery = scheduledDelivery(type, options);
    if (delivery && !this.scheduled.enabled && !this.brokerDelays.enabled) {
      throw new ConfigurationError(
        `publish() of '${type}' with deliverAt or delayMs: scheduled messages wait in the outbox's ` +
          "database (the module's dataSource option), or without one in the broker's delay levels " +
          '(scheduling: { brokerDelays: true }); see docs/scheduling.md',
      );
    }
    const outbound = messages.map((message) => this.envelopes.create(message, options));
    if (delivery && this.scheduled.enabled) {
      await this.scheduled.write(outbound, delivery, options.manager);
    } else if (delivery) {
      await this.sendNow(this.brokerDelays.delayed(outbound, delivery));
      this.brokerDelays.recordSent(outbound.length);
    } else if (this.outbox.enabled) {
      await this.outbox.write(outbound, options.manager);
    } else {
      await this.sendNow(outbound);
    }
    return outbound.map((each) => ({ messageId: each.properties.messageId }));
  }

  /**
   * Sends at once and waits for the broker's confirm; not tied to any database transaction. Refuses `deliverAt`
   * and `delayMs` (a ConfigurationError): a scheduled message goes through `publish()`.
   */
  async publishNow(message: object, options: PublishOptions = {}): Promise<PublishReceipt> {
    refuseSchedule('publishNow', message, options);
    const outbound = this.envelopes.create(message, options);
    await this.sendNow([outbound]);
    return { messageId: outbound.properties.messageId };
  }

  /**
   * Stores the claim-checked bodies, then sends each message with a confirm, in order. Bodies of messages that
   * were not sent (a refusal part-way) are deleted again; a message whose confirm timed out keeps its body, since
   * the broker may have taken it.
   */
  private async sendNow(outbound: readonly OutboundMessage[]): Promise<void> {
    await this.claimChecks.write(outbound);
    for (const [index, each] of outbound.entries()) {
      try {
        await this.confirms.publish(each);
      } catch (error) {
        const unsent = error instanceof PublishTimeoutError ? index + 1 : index;
        await this.claimChecks.discard(outbound.slice(unsent));
        throw error;
      }
    }
  }

  /**
   * Sends a request and resolves with its reply: the return value of the `@Consume({ reply: true })` handler
   * bound to its type (or of an `@MessagePattern()` handler). `timeoutMs` is required. The request goes to the
   * broker at once, never through the outbox, whatever transaction is open: a request waiting for a commit
   * would wait for its own reply. Without an idempotency key of its own it uses its message id.
   *
   * Rejects with RequestTimeoutError when no reply comes in time (the request also expires in the broker then),
   * RemoteHandlerError when the responder's handler failed for good, RequestInterruptedError when the publisher
   * connection dropped while it waited, UnroutableMessageError when no queue is bound for it, the signal's
   * reason when `options.signal` aborts, and a ConfigurationError when `timeoutMs` is missing or not a positive
   * number.
   */
  async request<TReply = unknown>(message: object, options: RequestOptions): Promise<TReply> {
    const timeoutMs = requestTimeout(describeType(message), options);
    refuseSchedule('request', message, options);
    const { signal, ...publishOptions } = options;
    const outbound = this.envelopes.create(message, publishOptions, 'message-id');
    await this.claimChecks.write([outbound]);
    return (await this.requests.request(outbound, timeoutMs, signal)) as TReply;
  }
}

/** Refuses the options that schedule a message on a call that sends at once. */
function refuseSchedule(call: string, message: object, options: Partial<PublishOptions>): void {
  if (options.deliverAt !== undefined || options.delayMs !== undefined) {
    throw new ConfigurationError(
      `${call}() of '${describeType(message)}' sends at once, so it takes no deliverAt or delayMs; ` +
        'schedule the message with publish()',
    );
  }
}

/** The type a message will be sent as, for an error about its options. */
function describeType(message: object): string {
  const raw = (message as { type?: unknown }).type;
  return typeof raw === 'string' ? raw : (message.constructor?.name ?? 'message');
}
