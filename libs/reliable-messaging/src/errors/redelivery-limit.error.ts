import { NonRetryableError } from './non-retryable.error';

/**
 * A message came back without an outcome more often than `retry.maxRedeliveries` allows: its handler keeps
 * killing the process (or the connection keeps dropping mid-handler). It is dead-lettered as `redelivery-limit`.
 */
export class RedeliveryLimitError extends NonRetryableError {
  override readonly name = 'RedeliveryLimitError';
  constructor(readonly redeliveries: number) {
    super(
      `${redeliveries} deliveries of this message ended without an outcome (the process stopped or the connection dropped while handling it)`,
    );
  }
}
