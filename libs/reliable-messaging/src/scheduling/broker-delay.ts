import type { Message } from 'amqplib';
import { HEADERS } from '../reliable-messaging.constants';
import { DELAY_RESOLUTION_MS, delayEntryExchange, delayRoutingKey } from '../retry/delay-levels';

/**
 * Scheduled messages without an outbox (docs/scheduling.md, "Without an outbox"): a message waits in the retry
 * delay levels (retry/delay-levels.ts) and comes out of level 0 into the republish queue, whose consumer (the
 * ScheduledRepublisher) sends it to its destination when due. Its due time and destination travel in headers,
 * which anyone who may publish to the levels can write, so the republisher checks them (judgeDelayed) before it
 * sends anything anywhere.
 */

/** How many times a message may go back into the levels because it came out before its due time. */
export const MAX_SCHEDULED_HOPS = 5;
/** How far past `scheduling.maxDelayMs` a due time may lie before it is refused: the clocks of two hosts may differ. */
export const CLOCK_SKEW_ALLOWANCE_MS = 60_000;
/** Times a scheduled message went back into the levels; carried only while it waits. */
export const SCHEDULED_HOPS_HEADER = 'rm-scheduled-hops';

/** The module-owned queue scheduled messages come out of the delay levels into (bound to the deliver exchange). */
export function republishQueueName(exchange: string): string {
  return `${exchange}.scheduled`;
}

/**
 * The queues the module itself consumes that have a dead-letter queue, beside the app's consumers': the republish
 * queue when scheduled messages go through the delay levels. Health, metrics and the operator tools read their
 * dead-letter queues as they read the consumers'.
 */
export function moduleOwnedQueues(options: {
  readonly exchange: string;
  readonly scheduling: { readonly brokerDelays: boolean };
}): string[] {
  return options.scheduling.brokerDelays ? [republishQueueName(options.exchange)] : [];
}

/** A delay rounded up to the levels' resolution, so that a message never comes out before it is due. */
export function roundUpDelay(delayMs: number): number {
  return Math.max(DELAY_RESOLUTION_MS, Math.ceil(delayMs / DELAY_RESOLUTION_MS) * DELAY_RESOLUTION_MS);
}

/** Where a message that must wait `delayMs` more enters the levels: exchange and routing key. */
export function delayTarget(exchange: string, delayMs: number): { exchange: string; routingKey: string } {
  const rounded = roundUpDelay(delayMs);
  return { exchange: delayEntryExchange(exchange, rounded), routingKey: delayRoutingKey(rounded) };
}

/** Why the republisher dead-letters a message (the `rm-dead-letter-reason` header). */
export type ScheduledRefusal =
  | 'scheduled-header-invalid'
  | 'scheduled-destination-refused'
  | 'scheduled-delay-too-long'
  | 'scheduled-loop'
  | 'scheduled-unroutable';

/** What the republisher does with a message that came out of the levels. */
export type DelayedVerdict =
  | { kind: 'deliver'; exchange: string; routingKey: string; dueAt: number }
  | { kind: 'wait'; remainingMs: number; hops: number }
  | { kind: 'refuse'; reason: ScheduledRefusal; detail: string };

/** What the republisher checks a message against. */
export interface DelayedMessagePolicy {
  /** The module's events exchange: the only destination. */
  exchange: string;
  maxDelayMs: number;
}

/**
 * Decides, from the message alone, whether it is due (and where it goes), must wait more, or is refused. A
 * destination is the module's own exchange, with the message's own type as routing key (what `publish()` sends
 * without the outbox); a due time is a valid ISO time at most `maxDelayMs` (and the clock allowance) ahead.
 */
export function judgeDelayed(
  message: Pick<Message, 'properties'>,
  now: number,
  policy: DelayedMessagePolicy,
): DelayedVerdict {
  const headers = (message.properties.headers ?? {}) as Record<string, unknown>;
  const claimed = headers[HEADERS.scheduledFor];
  const dueAt = typeof claimed === 'string' && claimed.length <= 40 ? Date.parse(claimed) : NaN;
  if (!Number.isFinite(dueAt)) {
    return refuse('scheduled-header-invalid', `${HEADERS.scheduledFor} is not a time: ${describe(claimed)}`);
  }
  const exchange = headers[HEADERS.originalExchange];
  if (exchange !== policy.exchange) {
    return refuse(
      'scheduled-destination-refused',
      `${HEADERS.originalExchange} ${describe(exchange)} is not the module's exchange '${policy.exchange}'`,
    );
  }
  const routingKey = headers[HEADERS.originalRoutingKey];
  const type: unknown = message.properties.type;
  if (typeof type !== 'string' || type === '' || Buffer.byteLength(type) > 255 || routingKey !== type) {
    return refuse(
      'scheduled-destination-refused',
      `${HEADERS.originalRoutingKey} ${describe(routingKey)} is not the message's type ${describe(type)}`,
    );
  }
  const remainingMs = dueAt - now;
  if (remainingMs > policy.maxDelayMs + CLOCK_SKEW_ALLOWANCE_MS) {
    return refuse(
      'scheduled-delay-too-long',
      `due at ${claimed as string}, ${remainingMs} ms ahead: more than scheduling.maxDelayMs (${policy.maxDelayMs} ms)`,
    );
  }
  if (remainingMs <= 0) return { kind: 'deliver', exchange: policy.exchange, routingKey: type, dueAt };
  const previous = headers[SCHEDULED_HOPS_HEADER];
  const hops =
    (typeof previous === 'number' && Number.isInteger(previous) && previous > 0 ? previous : 0) + 1;
  if (hops > MAX_SCHEDULED_HOPS) {
    return refuse(
      'scheduled-loop',
      `came out of the delay levels ${MAX_SCHEDULED_HOPS} times before its due time ${claimed as string}`,
    );
  }
  return { kind: 'wait', remainingMs, hops };
}

/** The headers a scheduled message reaches its destination with: the waiting's own removed, its due time kept. */
export function deliveredHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const copy = { ...headers };
  delete copy[HEADERS.retryQueue];
  delete copy[HEADERS.originalExchange];
  delete copy[HEADERS.originalRoutingKey];
  delete copy[SCHEDULED_HOPS_HEADER];
  return copy;
}

function refuse(reason: ScheduledRefusal, detail: string): DelayedVerdict {
  return { kind: 'refuse', reason, detail };
}

function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  if (typeof value === 'string') return `'${value.slice(0, 80)}'`;
  if (Buffer.isBuffer(value)) return 'a byte string';
  return typeof value;
}
