import { Inject, Injectable, Logger } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { DEAD_LETTER_HEADERS, HEADERS } from '../reliable-messaging.constants';
import { uuidv7 } from '../envelope/uuid-v7';
import { ClaimCheckStoreUnavailableError } from '../errors/claim-check-store-unavailable.error';
import { InvalidMessageError } from '../errors/invalid-message.error';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { errorMessage } from '../util/error-text';
import { ClaimCheckReader } from './claim-check-reader.service';

/** Reasons that say the claim check itself is broken: such a dead letter keeps its headers as they are. */
const BROKEN_CLAIM_CHECK = new Set([
  'claim-check-forged',
  'claim-check-missing',
  'claim-check-corrupt',
  'claim-check-too-large',
  'claim-check-unreadable',
  'claim-check-unsupported',
]);

/**
 * Gives each claim-checked dead letter its own copy of its body, kept `claimCheck.deadLetterTimeToLiveMs`:
 * bodies expire after `claimCheck.timeToLiveMs`, dead-letter queues never do, and the original body may be shared
 * by the event's copies in other queues, so neither its life nor its deletion can follow one dead letter. The
 * copy belongs to its dead letter alone (`rm-dead-letter-claim-check` names it), so purging the dead letter may
 * delete it.
 */
@Injectable()
export class DeadLetterClaimCheck {
  private readonly logger = new Logger('ReliableMessaging');
  /**
   * The copy made for a delivery whose dead letter could not be published yet: publishWhileHeld calls again with
   * the same delivery, and one copy serves every try.
   */
  private readonly copies = new WeakMap<InboundDelivery, string>();

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly reader: ClaimCheckReader,
  ) {}

  /**
   * Points the dead letter's `headers` at a copy of the delivery's body made for it. A broken claim check
   * (missing, corrupt, forged) leaves them as they are. Throws ClaimCheckStoreUnavailableError while the store is
   * down: the caller holds the delivery and tries again (publishWhileHeld), spending no attempt, so a dead
   * letter is never published without its body.
   */
  async copyFor(delivery: InboundDelivery, error: unknown, headers: Record<string, unknown>): Promise<void> {
    // Only the module sets it, and only on a copy it made just now: never carried over from a message.
    delete headers[DEAD_LETTER_HEADERS.claimCheckCopy];
    const { store, deadLetterTimeToLiveMs } = this.options.claimCheck;
    if (!store || headers[HEADERS.claimCheck] === undefined) return;
    if (error instanceof InvalidMessageError && BROKEN_CLAIM_CHECK.has(error.reason)) return;
    let reference = this.copies.get(delivery);
    if (reference === undefined) {
      let stored;
      try {
        stored = await this.reader.stored(headers);
      } catch (failure) {
        if (failure instanceof ClaimCheckStoreUnavailableError) throw failure;
        this.logger.warn(
          `${delivery.consumer.name}: the dead letter keeps the original claim check, whose body cannot be copied (${errorMessage(failure)})`,
        );
        return;
      }
      const type = typeof delivery.raw.properties.type === 'string' ? delivery.raw.properties.type : '';
      const info = {
        id: uuidv7(),
        expiresAt: new Date(Date.now() + deadLetterTimeToLiveMs),
        messageType: type,
      };
      reference = store.referenceFor(info);
      try {
        await store.put(store.locate(reference) as string, stored.body, info);
      } catch (failure) {
        if (failure instanceof ClaimCheckStoreUnavailableError) throw failure;
        // A refusal (an S3 403, a constraint) is not waited out: the dead letter keeps the original body's
        // reference, which lives its own time to live, rather than no dead letter at all.
        this.logger.error(
          `${delivery.consumer.name}: could not copy the claim-checked body for the dead letter (${errorMessage(failure)}); it keeps the original reference, which expires after claimCheck.timeToLiveMs`,
        );
        return;
      }
      this.copies.set(delivery, reference);
    }
    headers[HEADERS.claimCheck] = reference;
    headers[DEAD_LETTER_HEADERS.claimCheckCopy] = reference;
  }

  /**
   * Deletes a removed dead letter's own copy of its body, if it has one; a body it shares (a dead letter made
   * before copies, or one whose claim check was broken) is left to the pruner. A failure is logged, not thrown:
   * the dead letter is gone, and the copy is pruned when it expires.
   */
  async discardCopyOf(headers: Record<string, unknown>, messageId: string | undefined): Promise<void> {
    const store = this.options.claimCheck.store;
    const reference = text(headers[DEAD_LETTER_HEADERS.claimCheckCopy]);
    if (!store || reference === undefined || reference !== text(headers[HEADERS.claimCheck])) return;
    const location = store.locate(reference);
    if (location === undefined) return;
    await store.delete(location).catch((error: unknown) => {
      this.logger.warn(
        `could not delete the claim-checked body of dead letter ${messageId ?? '?'} (${errorMessage(error)}); it is pruned when it expires`,
      );
    });
  }
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}
