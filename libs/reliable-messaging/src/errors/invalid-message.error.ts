import { NonRetryableError } from './non-retryable.error';
import type { UntrustedJsonReason } from './untrusted-json.error';

/** A JSON body that breaks the module's `jsonLimits`: `json-too-deep`, `json-duplicate-key`, ... */
export type JsonLimitReason =
  `json-${Exclude<UntrustedJsonReason, 'invalid-utf8' | 'malformed-json' | 'forbidden-key'>}`;

/** Why an incoming message was refused before its handler ran. Each is recorded as the dead-letter reason. */
export type InvalidMessageReason =
  | 'payload-too-large'
  | 'unsupported-content-type'
  | 'invalid-utf8'
  | 'malformed-json'
  | 'forbidden-key'
  | JsonLimitReason
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
