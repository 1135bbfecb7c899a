import type { OutboundMessage } from '../envelope/envelope';
import { ConfigurationError } from '../errors/configuration.error';

/**
 * When a scheduled message is due: at a moment (`deliverAt`), or a delay after it was written (`delayMs`), counted
 * on the database's clock so that a skew between the app's clock and the database's does not shift it.
 */
export type ScheduledDelivery = { at: Date; afterMs?: undefined } | { afterMs: number; at?: undefined };

/** The publish options that schedule a message (see PublishOptions). */
export interface ScheduleOptions {
  deliverAt?: unknown;
  delayMs?: unknown;
}

/**
 * The delivery time `options` ask for, checked; undefined when they ask for none or for one already due (a
 * `deliverAt` not after `now`, a `delayMs` of 0), which is sent as any other message. Throws a ConfigurationError
 * naming the message type when both are given, when `deliverAt` is not a valid Date, or when `delayMs` is not a
 * finite number of 0 or more (or puts the time beyond what a Date holds).
 */
export function scheduledDelivery(
  type: string,
  options: ScheduleOptions,
  now: number = Date.now(),
): ScheduledDelivery | undefined {
  const { deliverAt, delayMs } = options;
  if (deliverAt !== undefined && delayMs !== undefined) {
    throw new ConfigurationError(
      `publish() of '${type}': give deliverAt or delayMs, not both (deliverAt is a moment, delayMs a delay from now)`,
    );
  }
  if (deliverAt !== undefined) {
    if (!(deliverAt instanceof Date) || Number.isNaN(deliverAt.getTime())) {
      throw new ConfigurationError(
        `publish() of '${type}': deliverAt must be a valid Date, got ${describe(deliverAt)}`,
      );
    }
    return deliverAt.getTime() > now ? { at: new Date(deliverAt.getTime()) } : undefined;
  }
  if (delayMs !== undefined) {
    if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0) {
      throw new ConfigurationError(
        `publish() of '${type}': delayMs must be a finite number of milliseconds, 0 or more, got ${describe(delayMs)}`,
      );
    }
    if (Number.isNaN(new Date(now + delayMs).getTime())) {
      throw new ConfigurationError(
        `publish() of '${type}': delayMs ${delayMs} puts the message beyond the latest time a Date can hold`,
      );
    }
    return delayMs > 0 ? { afterMs: delayMs } : undefined;
  }
  return undefined;
}

/** When `delivery` falls, by the app's clock: for a delay, `now` plus the delay. */
export function dueTime(delivery: ScheduledDelivery, now: number = Date.now()): number {
  return delivery.at ? delivery.at.getTime() : now + delivery.afterMs;
}

/**
 * Refuses, with a ConfigurationError, a claim-checked message whose stored body would expire before it is due at
 * `dueAt`: its consumer would find no body.
 */
export function assertBodiesOutlive(messages: readonly OutboundMessage[], dueAt: number): void {
  const outlived = messages.find(
    (message) => message.claimCheck && message.claimCheck.info.expiresAt.getTime() < dueAt,
  );
  if (outlived) {
    throw new ConfigurationError(
      `publish() of '${outlived.properties.type ?? outlived.routingKey}': its claim-checked body expires at ` +
        `${outlived.claimCheck?.info.expiresAt.toISOString()}, before the message is due at ` +
        `${new Date(dueAt).toISOString()}; raise claimCheck.timeToLiveMs or schedule it sooner`,
    );
  }
}

function describe(value: unknown): string {
  if (value instanceof Date) return 'an Invalid Date';
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  if (typeof value === 'string') return `the string '${value.slice(0, 40)}'`;
  return typeof value;
}
