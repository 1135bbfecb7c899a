import { NonRetryableError } from './non-retryable.error';

/** The channel methods that settle a delivery by hand, as Nest's RMQ transport leaves them to a handler. */
export type ManualSettlementCall = 'ack' | 'nack' | 'reject' | 'ackAll' | 'nackAll';

/**
 * A handler settled its message by hand (`ctx.getChannelRef().ack(ctx.getMessage())`, as a handler written
 * for Nest's RMQ transport does). The module settles every message itself, after the handler returns, so the
 * call is refused; the same call would fail on every attempt, so the message is dead-lettered at once, reason
 * `manual-settlement`, rather than retried.
 */
export class ManualSettlementError extends NonRetryableError {
  override readonly name = 'ManualSettlementError';
  /** The dead-letter reason it is recorded under. */
  readonly reason = 'manual-settlement';

  constructor(
    readonly handler: string,
    readonly call: ManualSettlementCall,
  ) {
    super(
      `${handler} called channel.${call}() itself: the module acks after your handler returns, and retries or ` +
        `dead-letters when it throws; remove the ${call} call`,
    );
  }
}
