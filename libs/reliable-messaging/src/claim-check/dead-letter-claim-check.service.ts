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
 * bodies expire after `claimCheck.timeToLiveMs`, and the original body may be shared by the event's copies in
 * other queues (and other apps, which prune a shared store without knowing this app's dead letters), so its life
 * cannot follow one dead letter. A replay gives the replayed message a fresh copy of its own in turn
 * (`copyForReplay`), kept `claimCheck.timeToLiveMs` like any published body, which startup checks outlasts the
 * retry schedule. Nothing here deletes a body: a header is a claim anyone can write, so no header may name what is
 * deleted. Bodies go only through the pruner, which keeps every expired body a dead letter still refers to
 * (ClaimCheckPruner).
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
      try {
        reference = await this.storeCopy(stored.body, type, deadLetterTimeToLiveMs);
      } catch (failure) {
        if (failure instanceof ClaimCheckStoreUnavailableError) throw failure;
        // A refusal (an S3 403, a constraint) is not waited out: the dead letter keeps the original body's
        // reference, which the pruner keeps while the dead letter refers to it, rather than no dead letter at all.
        this.logger.error(
          `${delivery.consumer.name}: could not copy the claim-checked body for the dead letter (${errorMessage(failure)}); it keeps the original reference`,
        );
        return;
      }
      this.copies.set(delivery, reference);
    }
    headers[HEADERS.claimCheck] = reference;
    headers[DEAD_LETTER_HEADERS.claimCheckCopy] = reference;
  }

  /**
   * A fresh copy of a dead letter's stored body for the message a replay publishes, kept
   * `claimCheck.timeToLiveMs`: the replayed message may wait in a retry delay long after its dead letter is gone,
   * and must not share a body with it. Resolves with the copy's reference, or undefined when there is nothing to
   * copy (no store, no reference, or a claim check that is broken: the replay then carries it as it is, and the
   * consumer dead-letters it with its reason again). Throws ClaimCheckStoreUnavailableError while the store is
   * down.
   */
  async copyForReplay(
    headers: Record<string, unknown>,
    messageType: string | undefined,
  ): Promise<string | undefined> {
    const { store, timeToLiveMs } = this.options.claimCheck;
    if (!store || headers[HEADERS.claimCheck] === undefined) return undefined;
    let stored;
    try {
      stored = await this.reader.stored(headers);
    } catch (failure) {
      if (failure instanceof ClaimCheckStoreUnavailableError) throw failure;
      return undefined;
    }
    return this.storeCopy(stored.body, messageType ?? '', timeToLiveMs);
  }

  private async storeCopy(body: Buffer, messageType: string, timeToLiveMs: number): Promise<string> {
    const store = this.options.claimCheck.store!;
    const info = { id: uuidv7(), expiresAt: new Date(Date.now() + timeToLiveMs), messageType };
    const reference = store.referenceFor(info);
    await store.put(store.locate(reference) as string, body, info);
    return reference;
  }
}
