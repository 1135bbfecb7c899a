import { NonRetryableError } from './non-retryable.error';

/** Why an incoming message was refused before its handler ran. Each is recorded as the dead-letter reason. */
export type InvalidMessageReason =
  | 'payload-too-large'
  | 'unsupported-content-type'
  | 'invalid-utf8'
  | 'malformed-json'
  | 'forbidden-key'
  | 'missing-header'
  | 'invalid-header'
  | 'unsupported-schema-version'
  | 'unknown-message-type'
  | 'validation-failed'
  | 'invalid-wire-format'
  | 'claim-check-missing'
  | 'claim-check-corrupt'
  | 'claim-check-forged'
  | 'claim-check-too-large'
  | 'claim-check-unreadable'
  | 'claim-check-unsupported';

/** An incoming message that can never be handled as it is: it is dead-lettered at once, never retried. */
export class InvalidMessageError extends NonRetryableError {
  override readonly name = 'InvalidMessageError';
  constructor(
    readonly reason: InvalidMessageReason,
    message: string,
  ) {
    super(`${reason}: ${message}`);
  }
}
