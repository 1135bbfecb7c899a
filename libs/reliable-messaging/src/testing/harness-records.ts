/**
 * How the module settled one delivery, as the broker saw it. `retried` and `dead-lettered` are read from what
 * the module published before it acknowledged the delivery; `duplicate` from the inbox.
 */
export type DeliveryOutcome =
  /** Handled and acknowledged. */
  | { readonly kind: 'acked' }
  /** Its idempotency key was handled before: the handler did not run, and the delivery was acknowledged. */
  | { readonly kind: 'duplicate'; readonly idempotencyKey: string }
  /** Failed and sent through the delay levels: it comes back as `nextAttempt` once `delayMs` (the levels' 100 ms steps) has passed. */
  | { readonly kind: 'retried'; readonly nextAttempt: number; readonly delayMs: number }
  /** Moved to the dead-letter queue, with the reason, the error and the attempts its headers record. */
  | {
      readonly kind: 'dead-lettered';
      readonly reason: string;
      readonly errorClass: string;
      readonly errorMessage: string;
      readonly attempts: number;
    }
  /** Given back to its queue without spending an attempt (held through a database outage, or at shutdown). */
  | { readonly kind: 'returned' }
  /** Back at the head of its queue unacknowledged (an ordered consumer holding its place, a closed channel). */
  | { readonly kind: 'requeued' };

/** A message the app published (directly or through the outbox's relay), as it reached the broker. */
export interface PublishedRecord {
  readonly exchange: string;
  readonly routingKey: string;
  /** The message's `type` property, e.g. `order.paid`. */
  readonly type?: string;
  readonly messageId?: string;
  /** The body parsed as JSON, or the raw bytes when it is not JSON. */
  readonly body: unknown;
  readonly headers: Readonly<Record<string, unknown>>;
  /** The queues it was routed to; empty when nothing was bound to its routing key. */
  readonly queues: readonly string[];
}

/** One delivery to a consumer's queue and how it ended. */
export interface ConsumedRecord {
  readonly queue: string;
  readonly type?: string;
  readonly messageId?: string;
  /** The attempt this delivery was (1 for the first). */
  readonly attempt: number;
  readonly body: unknown;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly outcome: DeliveryOutcome;
}

/** What the harness records, by list. */
export interface HarnessRecords {
  /** Every message the app published. */
  published: PublishedRecord;
  /** Every delivery a consumer settled, whatever its outcome. */
  consumed: ConsumedRecord;
  /** The deliveries that were retried. */
  retried: ConsumedRecord;
  /** The deliveries that were dead-lettered. */
  deadLettered: ConsumedRecord;
  /** The deliveries skipped as duplicates. */
  duplicates: ConsumedRecord;
}

/** The name of one of the harness's lists. */
export type RecordKind = keyof HarnessRecords;

/** Which list, besides `consumed`, a settled delivery also goes in. */
export function listOf(outcome: DeliveryOutcome): RecordKind | undefined {
  switch (outcome.kind) {
    case 'retried':
      return 'retried';
    case 'dead-lettered':
      return 'deadLettered';
    case 'duplicate':
      return 'duplicates';
    default:
      return undefined;
  }
}

/** The body as JSON when it parses, else its bytes. */
export function bodyOf(content: Buffer): unknown {
  try {
    return JSON.parse(content.toString('utf8')) as unknown;
  } catch {
    return content;
  }
}
