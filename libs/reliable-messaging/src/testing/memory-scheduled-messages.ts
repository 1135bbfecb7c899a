import type { EntityManager } from 'typeorm';
import type { OutboundMessage } from '../envelope/envelope';
import { HEADERS } from '../reliable-messaging.constants';
import { cancelTarget, type CancelTarget } from '../scheduling/cancel-target';
import { dueTime, type ScheduledDelivery } from '../scheduling/scheduled-delivery';

/** A message published with `deliverAt` or `delayMs`, waiting for the test's clock. */
export interface WaitingMessage {
  readonly message: OutboundMessage;
  /** When it is due (epoch ms, on the test's clock). */
  readonly dueAt: number;
  /** Its place among messages due at the same moment: the order they were scheduled in. */
  readonly sequence: number;
}

/**
 * The scheduled messages of the testing module without a database, held for the harness's clock instead of the
 * `rm_scheduled` table: `publish(message, { delayMs | deliverAt })` writes here (in place of ScheduledWriter),
 * saga timeouts are cancelled here (in place of ScheduledMessages), and `harness.clock.advance()` sends each as its
 * time comes. The clock runs ahead of the app's clock by what the test has advanced; a `delayMs` counts from the
 * test's time, as a saga's `pendingTimeouts` do, so a delay asked for after the clock moved is as long as asked.
 */
export class MemoryScheduledMessages {
  /** Scheduled messages can be written: the publisher checks this as it checks ScheduledWriter's. */
  readonly enabled = true;
  /** How far the test's clock is ahead of the app's, in milliseconds. */
  aheadMs = 0;
  private readonly waiting: WaitingMessage[] = [];
  private sequence = 0;

  /** The test's time (epoch ms). */
  now(): number {
    return Date.now() + this.aheadMs;
  }

  /** Holds `messages` until `delivery` comes; the transaction, if any, is not this store's. */
  write(
    messages: readonly OutboundMessage[],
    delivery: ScheduledDelivery,
    _manager?: EntityManager,
  ): Promise<void> {
    const dueAt = dueTime(delivery, this.now());
    for (const message of messages) this.waiting.push({ message, dueAt, sequence: ++this.sequence });
    return Promise.resolve();
  }

  /** Cancels a waiting message by its id, or every one of an idempotency key; resolves with how many went. */
  cancel(target: CancelTarget, _options: { manager?: EntityManager } = {}): Promise<number> {
    const checked = cancelTarget(target);
    const before = this.waiting.length;
    const kept = this.waiting.filter(({ message }) =>
      'messageId' in checked
        ? message.properties.messageId !== checked.messageId
        : idempotencyKeyOf(message) !== checked.idempotencyKey,
    );
    this.waiting.splice(0, this.waiting.length, ...kept);
    return Promise.resolve(before - kept.length);
  }

  /** The first message due by `until` (epoch ms), taken out of the waiting ones; undefined when none is. */
  takeDue(until: number): WaitingMessage | undefined {
    let first: WaitingMessage | undefined;
    for (const each of this.waiting) {
      if (each.dueAt > until) continue;
      if (
        !first ||
        each.dueAt < first.dueAt ||
        (each.dueAt === first.dueAt && each.sequence < first.sequence)
      ) {
        first = each;
      }
    }
    if (first) this.waiting.splice(this.waiting.indexOf(first), 1);
    return first;
  }

  /** The messages still waiting, the first due first. */
  list(): readonly WaitingMessage[] {
    return [...this.waiting].sort((a, b) => a.dueAt - b.dueAt || a.sequence - b.sequence);
  }

  /** Forgets every waiting message. */
  clear(): void {
    this.waiting.length = 0;
  }
}

function idempotencyKeyOf(message: OutboundMessage): string {
  const key = message.properties.headers?.[HEADERS.idempotencyKey];
  return typeof key === 'string' ? key : message.properties.messageId;
}
