import { createHash } from 'node:crypto';

/**
 * The message id of a message that arrived without one (Nest's RMQ client sets none): `sha256:<hex>` of its body,
 * the same for every copy of the message (the broker's redelivery, the module's retries and redelivery
 * checkpoints), so the inbox skips a copy of one it has handled.
 */
export function bodyMessageId(body: Buffer): string {
  return `sha256:${createHash('sha256').update(body).digest('hex')}`;
}
