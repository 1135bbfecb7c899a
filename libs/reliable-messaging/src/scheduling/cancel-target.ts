import { ConfigurationError } from '../errors/configuration.error';

/** Which scheduled messages `ScheduledMessages.cancel()` deletes: one by its message id, or all of one idempotency key. */
export type CancelTarget = { messageId: string } | { idempotencyKey: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The longest idempotency key the envelope allows, so no longer one can name a message. */
const MAX_KEY_LENGTH = 256;

/**
 * `input` checked before it reaches a query: exactly one of `messageId` (a UUID, as `publish()` returned it) and
 * `idempotencyKey` (1 to 256 characters). Throws a ConfigurationError that says what was wrong otherwise.
 */
export function cancelTarget(input: unknown): CancelTarget {
  if (typeof input !== 'object' || input === null) {
    throw new ConfigurationError('cancel() takes { messageId } or { idempotencyKey }');
  }
  const { messageId, idempotencyKey } = input as { messageId?: unknown; idempotencyKey?: unknown };
  if ((messageId === undefined) === (idempotencyKey === undefined)) {
    throw new ConfigurationError('cancel() takes exactly one of messageId and idempotencyKey');
  }
  if (messageId !== undefined) {
    if (typeof messageId !== 'string' || !UUID.test(messageId)) {
      throw new ConfigurationError(
        'cancel(): messageId must be a UUID, as publish() returned it in its receipt',
      );
    }
    return { messageId: messageId.toLowerCase() };
  }
  if (
    typeof idempotencyKey !== 'string' ||
    idempotencyKey.length === 0 ||
    idempotencyKey.length > MAX_KEY_LENGTH
  ) {
    throw new ConfigurationError(
      `cancel(): idempotencyKey must be a string of 1 to ${MAX_KEY_LENGTH} characters`,
    );
  }
  return { idempotencyKey };
}
