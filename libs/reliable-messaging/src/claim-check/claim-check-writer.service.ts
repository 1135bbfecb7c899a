import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { HEADERS } from '../reliable-messaging.constants';
import type { OutboundMessage } from '../envelope/envelope';
import { uuidv7 } from '../envelope/uuid-v7';
import { ConfigurationError } from '../errors/configuration.error';
import { PayloadTooLargeError } from '../errors/publish.error';
import { errorMessage } from '../util/error-text';
import type { MessageClaimCheck } from '../options/claim-check.options';

/** A message's wire body once the claim check has taken what it keeps. */
export interface ClaimCheckedBody {
  wire: Buffer;
  claimCheck?: OutboundMessage['claimCheck'];
}

/**
 * The publishing half of the claim check. `offload()` decides, while the envelope is built, whether a body (or
 * one property) goes to the store, and sets the reference, size and SHA-256 headers; `write()` stores the bodies
 * before the messages are written to the outbox or sent, in the outbox's transaction where the store can join
 * it; `discard()` deletes the bodies of messages that were not sent after all.
 */
@Injectable()
export class ClaimCheckWriter {
  private readonly logger = new Logger('ReliableMessaging');

  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  offload(
    type: string,
    own: MessageClaimCheck | undefined,
    payload: object,
    body: Buffer,
    headers: Record<string, string | number>,
  ): ClaimCheckedBody {
    const { store, thresholdBytes: moduleThreshold, maxBodyBytes, timeToLiveMs } = this.options.claimCheck;
    const threshold = own?.thresholdBytes ?? moduleThreshold;
    if (threshold === undefined) return { wire: body };
    let stored = body;
    let wire: Buffer = Buffer.alloc(0);
    if (own?.field !== undefined) {
      const value = (payload as Record<string, unknown>)[own.field];
      if (value === undefined) return { wire: body };
      stored = Buffer.from(JSON.stringify(value), 'utf8');
      if (stored.length <= threshold) return { wire: body };
      const { [own.field]: _kept, ...rest } = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
      wire = Buffer.from(JSON.stringify(rest), 'utf8');
      headers[HEADERS.claimCheckField] = own.field;
    } else if (body.length <= threshold) {
      return { wire: body };
    }
    if (!store) {
      throw new ConfigurationError(
        `message '${type}' goes through the claim check, but the module has no store: give it a dataSource or claimCheck.store`,
      );
    }
    if (stored.length > maxBodyBytes) {
      throw new PayloadTooLargeError(
        `message '${type}' would keep ${stored.length} bytes in the claim check, above the limit of ${maxBodyBytes} (claimCheck.maxBodyBytes)`,
      );
    }
    const info = { id: uuidv7(), expiresAt: new Date(Date.now() + timeToLiveMs), messageType: type };
    headers[HEADERS.claimCheck] = store.referenceFor(info);
    headers[HEADERS.claimCheckBytes] = stored.length;
    headers[HEADERS.claimCheckSha256] = createHash('sha256').update(stored).digest('hex');
    const location = store.locate(headers[HEADERS.claimCheck] as string) as string;
    return { wire, claimCheck: { location, body: stored, info } };
  }

  /**
   * Stores the bodies of `messages` that have one; `manager` is the outbox's transaction. A failure deletes the
   * bodies already stored and rethrows (ClaimCheckStoreUnavailableError when the store is down): nothing is sent.
   */
  async write(messages: readonly OutboundMessage[], manager?: EntityManager): Promise<void> {
    const store = this.options.claimCheck.store;
    const pending = messages.filter((message) => message.claimCheck);
    if (!store || pending.length === 0) return;
    const written: OutboundMessage[] = [];
    try {
      for (const message of pending) {
        const { location, body, info } = message.claimCheck!;
        await store.put(location, body, info, manager);
        written.push(message);
      }
    } catch (error) {
      // Inside a transaction the rollback takes the PostgreSQL store's rows with it; other stores delete here.
      if (!manager || store.kind !== 'postgres') await this.discard(written);
      throw error;
    }
  }

  /** Deletes the stored bodies of messages that were not sent; a failure is logged, the pruner ends them later. */
  async discard(messages: readonly OutboundMessage[]): Promise<void> {
    const store = this.options.claimCheck.store;
    if (!store) return;
    for (const message of messages) {
      if (!message.claimCheck) continue;
      await store.delete(message.claimCheck.location).catch((error: unknown) => {
        this.logger.warn(
          `could not delete the claim-check body of unsent message ${message.properties.messageId} (${errorMessage(error)}); it is pruned when it expires`,
        );
      });
    }
  }
}
