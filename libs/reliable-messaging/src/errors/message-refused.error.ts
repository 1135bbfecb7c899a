import { NonRetryableError } from './non-retryable.error';

/**
 * Why Nest's enhancers refused a message before its handler ran; each is recorded as the dead-letter reason.
 *
 * - `guard-refused`: a guard's `canActivate` returned false;
 * - `refused-before-handler`: a guard, an interceptor or a pipe threw a 400 or 422 HTTP exception, such as the
 *   `BadRequestException` of `ValidationPipe` or `ParseIntPipe`.
 */
export type MessageRefusal = 'guard-refused' | 'refused-before-handler';

/**
 * A guard or a pipe refused the message before its handler ran. The message itself is what they refused, so
 * another attempt cannot help: it is dead-lettered at once with the refusal as its reason. The exception they
 * threw is the `cause`.
 */
export class MessageRefusedError extends NonRetryableError {
  override readonly name = 'MessageRefusedError';
  constructor(
    readonly reason: MessageRefusal,
    message: string,
    options: { cause: unknown },
  ) {
    super(`${reason}: ${message}`, options);
  }
}
