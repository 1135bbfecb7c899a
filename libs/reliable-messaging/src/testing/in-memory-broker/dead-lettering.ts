/** Why a message left a queue for its dead-letter exchange, as RabbitMQ writes it in `x-death`. */
export type DeathReason = 'expired' | 'rejected' | 'delivery_limit' | 'maxlen';

/** One entry of `x-death`. */
interface DeathRecord {
  count: number;
  reason: DeathReason;
  queue: string;
  time: unknown;
  exchange: string;
  'routing-keys': string[];
  'original-expiration'?: string;
}

/** Where and why a message died. */
export interface Death {
  queue: string;
  reason: DeathReason;
  exchange: string;
  routingKey: string;
  atSeconds: number;
  /** The message's own `expiration`, which dead-lettering removes. */
  originalExpiration?: string;
}

/**
 * A dead letter's headers, as RabbitMQ 3.10 writes them: `x-death` holds one entry per queue and reason, counted,
 * newest first, with the message's `original-expiration` when it had one; `x-first-death-*` are set once.
 * (`x-last-death-*` came with RabbitMQ 3.13.)
 *
 * NOTE: amqplib's `XDeath` type lacks the `delivery_limit` reason RabbitMQ writes; the headers stay untyped here.
 */
export function withDeath(
  previous: Readonly<Record<string, unknown>>,
  death: Death,
): Record<string, unknown> {
  const headers: Record<string, unknown> = { ...previous };
  const deaths = Array.isArray(headers['x-death']) ? [...(headers['x-death'] as DeathRecord[])] : [];
  const index = deaths.findIndex((entry) => entry.queue === death.queue && entry.reason === death.reason);
  const earlier = index >= 0 ? deaths.splice(index, 1)[0] : undefined;
  deaths.unshift({
    count: (earlier?.count ?? 0) + 1,
    reason: death.reason,
    queue: death.queue,
    time: { '!': 'timestamp', value: death.atSeconds },
    exchange: death.exchange,
    'routing-keys': [death.routingKey],
    ...(death.originalExpiration === undefined ? {} : { 'original-expiration': death.originalExpiration }),
  });
  headers['x-death'] = deaths;
  headers['x-first-death-queue'] ??= death.queue;
  headers['x-first-death-reason'] ??= death.reason;
  headers['x-first-death-exchange'] ??= death.exchange;
  return headers;
}
