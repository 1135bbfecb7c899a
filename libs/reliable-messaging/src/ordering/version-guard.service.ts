import { Injectable, Logger } from '@nestjs/common';
import type { MessageContext } from '../context/message-context';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import { OTHER_TYPE } from '../metrics/message-type-label';
import { isNewerVersion, type Version } from './version';

/** The version a handler holds and the one a message brings, for `VersionGuard.isStale()`. */
export interface VersionCheck {
  /** The version of the state the handler holds; `null` or `undefined` when it holds none yet. */
  current: Version | null | undefined;
  /** The version the message brings. */
  incoming: Version;
}

/**
 * The guard of an order-independent handler: a message that is not newer than the state already held is
 * discarded rather than applied, so a late or duplicate message never overwrites newer state, whatever order
 * messages arrive in. Every discard is counted in `rm_stale_messages_discarded_total{queue,type}` and logged at
 * debug level. Read the current version under a row lock (or compare in the database with a conditional update
 * and report the outcome with `discard()`): two handlers of the same entity may run at once.
 *
 * @example
 * const product = await manager.findOne(Product, { where: { id: event.productId }, lock: { mode: 'pessimistic_write' } });
 * if (this.versions.isStale(ctx, { current: product?.version, incoming: event.version })) return;
 */
@Injectable()
export class VersionGuard {
  private readonly logger = new Logger('ReliableMessaging');

  constructor(
    private readonly metrics: MessagingMetrics,
    private readonly registry: ConsumerRegistry,
  ) {}

  /**
   * True when the message is stale (its version is not newer than the one held): the handler should return
   * without applying it, and the discard is counted. False when it is newer, or when nothing is held yet.
   * Throws a NonRetryableError when a version is not a version (see `compareVersions`).
   */
  isStale(ctx: MessageContext, check: VersionCheck): boolean {
    if (isNewerVersion(check.incoming, check.current)) return false;
    this.discard(
      ctx,
      `version ${String(check.incoming)} is not newer than the held ${String(check.current)}`,
    );
    return true;
  }

  /**
   * Counts the message of `ctx` as discarded, for a handler that let the database compare versions (an
   * `UPDATE ... WHERE version < :incoming` that touched no row).
   */
  discard(ctx: MessageContext, detail = 'not newer than the state held'): void {
    this.metrics.staleDiscarded.inc({ queue: ctx.queue, type: this.typeLabel(ctx) });
    this.logger.debug(
      `${ctx.consumer}: discarded stale message ${ctx.envelope.messageId} of type ${ctx.envelope.type}: ${detail}`,
    );
  }

  /** The `type` label, bounded to the types the consumer declares so a forged type adds no time series. */
  private typeLabel(ctx: MessageContext): string {
    const consumer = this.registry.consumers.find((candidate) => candidate.queue === ctx.queue);
    return consumer ? this.metrics.typeLabel(consumer, ctx.envelope.type) : OTHER_TYPE;
  }
}
