import { Inject, Injectable } from '@nestjs/common';
import { hostname } from 'node:os';
import { DEAD_LETTER_HEADERS, HEADERS } from '../reliable-messaging.constants';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { DeadLetterClaimCheck } from '../claim-check/dead-letter-claim-check.service';
import { withoutBrokerHeaders } from '../envelope/broker-headers';
import { readAttempt } from '../envelope/envelope-reader';
import { republish } from '../envelope/republish';
import { InvalidMessageError } from '../errors/invalid-message.error';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { errorMessage, errorStack } from '../util/error-text';

const MAX_STACK_LENGTH = 2000;
const MAX_MESSAGE_LENGTH = 1000;

/** Why a message was dead-lettered, when it isn't an InvalidMessageError's own reason. */
// `string & {}` keeps the named reasons visible to editors; a plain `string` would absorb them.
export type DeadLetterReason = 'non-retryable' | 'attempts-exhausted' | 'redelivery-limit' | (string & {});

/**
 * Moves a failed delivery to its queue's dead-letter queue: the same body and headers, plus headers that say
 * why (reason, error class, message and a truncated stack), where from (exchange, routing key, queue,
 * handler, host) and when (first and last failure), and how many attempts were made. Published with a confirm
 * through the dead-letter exchange; only then is the original acknowledged. A message dead-lettered before
 * (and replayed since) keeps its first failure time and counts one more dead-lettering. A claim-checked message's
 * dead letter refers to its own copy of the body (DeadLetterClaimCheck), which outlives the original; while the
 * store cannot be reached this throws, and the caller holds the delivery as it does while the broker is down.
 */
@Injectable()
export class DeadLetterService {
  private readonly host = hostname();

  constructor(
    private readonly publisher: ConfirmPublisher,
    private readonly claimChecks: DeadLetterClaimCheck,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  async deadLetter(delivery: InboundDelivery, error: unknown, reason?: DeadLetterReason): Promise<void> {
    const { raw, consumer } = delivery;
    const now = new Date().toISOString();
    const headers = withoutBrokerHeaders(raw.properties.headers);
    const failure = error instanceof Error ? error : new Error(String(error));
    const previousCount = Number(headers[DEAD_LETTER_HEADERS.count] ?? 0);
    const firstFailureAt =
      headers[DEAD_LETTER_HEADERS.firstFailureAt] ?? headers[HEADERS.firstFailureAt] ?? now;
    const exchange = headers[HEADERS.originalExchange] ?? raw.fields.exchange;
    const routingKey = headers[HEADERS.originalRoutingKey] ?? raw.fields.routingKey;
    delete headers[HEADERS.retryQueue];
    delete headers[HEADERS.firstFailureAt];
    Object.assign(headers, {
      [DEAD_LETTER_HEADERS.reason]:
        reason ?? (error instanceof InvalidMessageError ? error.reason : 'non-retryable'),
      [DEAD_LETTER_HEADERS.errorClass]: errorClassName(failure),
      // Scrubbed before they are cut, so that a cut never leaves half a password that the scrubber missed.
      [DEAD_LETTER_HEADERS.errorMessage]: errorMessage(failure).slice(0, MAX_MESSAGE_LENGTH),
      [DEAD_LETTER_HEADERS.errorStack]: errorStack(failure).slice(0, MAX_STACK_LENGTH),
      [DEAD_LETTER_HEADERS.queue]: consumer.queue,
      [DEAD_LETTER_HEADERS.exchange]: exchange,
      [DEAD_LETTER_HEADERS.routingKey]: routingKey,
      [DEAD_LETTER_HEADERS.handler]: consumer.name,
      [DEAD_LETTER_HEADERS.attempts]: attemptsOf(delivery),
      [DEAD_LETTER_HEADERS.firstFailureAt]: firstFailureAt,
      [DEAD_LETTER_HEADERS.lastFailureAt]: now,
      [DEAD_LETTER_HEADERS.host]: this.host,
      [DEAD_LETTER_HEADERS.count]:
        Number.isInteger(previousCount) && previousCount >= 0 ? previousCount + 1 : 1,
    });
    await this.claimChecks.copyFor(delivery, error, headers);
    await this.publisher.publish(
      republish(raw, { exchange: this.options.deadLetterExchange, routingKey: consumer.queue }, headers, {
        fallbackMessageId: delivery.envelope?.messageId,
      }),
    );
  }
}

/** The attempt that failed; read from the headers when the failure came before decoding did. */
function attemptsOf(delivery: InboundDelivery): number {
  if (delivery.envelope) return delivery.attempt;
  try {
    return readAttempt(delivery.raw);
  } catch {
    return delivery.attempt;
  }
}

/**
 * The class of an error as its author named it. The constructor's name rather than `name`, which a subclass
 * inherits: `class PaymentDeclined extends Error {}` is named `Error`, a subclass of NonRetryableError
 * `NonRetryableError`.
 */
export function errorClassName(error: Error): string {
  const constructorName = (error.constructor as { name?: unknown } | undefined)?.name;
  if (typeof constructorName === 'string' && constructorName !== '' && constructorName !== 'Error')
    return constructorName;
  return error.name || 'Error';
}
