import { NonRetryableError } from './non-retryable.error';

/**
 * Why a saga step refused its message for good; each is recorded as the dead-letter reason.
 *
 * - `saga-correlation-invalid`: the step's `correlate` threw or read no usable key from the message;
 * - `saga-instance-missing`: no instance has the key, and the step's `onMissing` is `'dead-letter'`;
 * - `saga-instance-completed`: the instance has completed, and the step's `onCompleted` is `'dead-letter'`;
 * - `saga-state-invalid`: the step left a state that is not plain JSON, or larger than `maxStateBytes`.
 */
export type SagaRefusal =
  'saga-correlation-invalid' | 'saga-instance-missing' | 'saga-instance-completed' | 'saga-state-invalid';

/** A saga step cannot handle its message whatever the attempt: dead-lettered at once with the refusal as its reason. */
export class SagaRefusedError extends NonRetryableError {
  override readonly name = 'SagaRefusedError';
  constructor(
    readonly reason: SagaRefusal,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${reason}: ${message}`, options);
  }
}
