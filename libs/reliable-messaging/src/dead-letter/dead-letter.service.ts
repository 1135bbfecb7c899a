import { Inject, Injectable } from '@nestjs/common';
import { hostname } from 'node:os';
import { v7 as uuidv7 } from 'uuid';
import { DEAD_LETTER_HEADERS } from '../reliable-messaging.constants';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { InvalidMessageError } from '../errors/invalid-message.error';
import type { InboundDelivery } from '../pipeline/inbound-delivery';

const MAX_STACK_LENGTH = 2000;
const MAX_MESSAGE_LENGTH = 1000;

/** Why a message was dead-lettered, when it isn't an InvalidMessageError's own reason. */
export type DeadLetterReason = 'non-retryable' | 'attempts-exhausted' | string;

/**
 * Moves a failed delivery to its queue's dead-letter queue: the same body and headers, plus headers that say
 * why (reason, error class, message and a truncated stack), where from (exchange, routing key, queue,
 * handler, host) and when (first and last failure), and how many attempts were made. Published with a confirm
 * through the dead-letter exchange; only then is the original acknowledged.
 */
@Injectable()
export class DeadLetterService {
  private readonly host = hostname();

  constructor(
    private readonly publisher: ConfirmPublisher,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  async deadLetter(delivery: InboundDelivery, error: unknown, reason?: DeadLetterReason): Promise<void> {
    const { raw, consumer } = delivery;
    const now = new Date().toISOString();
    const headers: Record<string, unknown> = { ...(raw.properties.headers ?? {}) };
    const failure = error instanceof Error ? error : new Error(String(error));
    const previousCount = Number(headers[DEAD_LETTER_HEADERS.count] ?? 0);
    Object.assign(headers, {
      [DEAD_LETTER_HEADERS.reason]:
        reason ?? (error instanceof InvalidMessageError ? error.reason : 'non-retryable'),
      [DEAD_LETTER_HEADERS.errorClass]: failure.name || failure.constructor?.name || 'Error',
      [DEAD_LETTER_HEADERS.errorMessage]: failure.message.slice(0, MAX_MESSAGE_LENGTH),
      [DEAD_LETTER_HEADERS.errorStack]: (failure.stack ?? '').slice(0, MAX_STACK_LENGTH),
      [DEAD_LETTER_HEADERS.queue]: consumer.queue,
      [DEAD_LETTER_HEADERS.exchange]: raw.fields.exchange,
      [DEAD_LETTER_HEADERS.routingKey]: raw.fields.routingKey,
      [DEAD_LETTER_HEADERS.handler]: consumer.name,
      [DEAD_LETTER_HEADERS.attempts]: delivery.attempt,
      [DEAD_LETTER_HEADERS.firstFailureAt]:
        headers[DEAD_LETTER_HEADERS.firstFailureAt] ?? headers['rm-first-failure-at'] ?? now,
      [DEAD_LETTER_HEADERS.lastFailureAt]: now,
      [DEAD_LETTER_HEADERS.host]: this.host,
      [DEAD_LETTER_HEADERS.count]: Number.isInteger(previousCount) ? previousCount + 1 : 1,
    });
    const properties = raw.properties;
    await this.publisher.publish({
      exchange: this.options.deadLetterExchange,
      routingKey: consumer.queue,
      body: raw.content,
      properties: {
        messageId: stringOr(properties.messageId) ?? delivery.envelope?.messageId ?? uuidv7(),
        type: stringOr(properties.type),
        contentType: stringOr(properties.contentType),
        contentEncoding: stringOr(properties.contentEncoding),
        correlationId: stringOr(properties.correlationId),
        appId: stringOr(properties.appId),
        timestamp: typeof properties.timestamp === 'number' ? properties.timestamp : undefined,
        headers,
      },
    });
  }
}

function stringOr(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
