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
}

/** Where and why a message died. */
export interface Death {
  queue: string;
  reason: DeathReason;
  exchange: string;
  routingKey: string;
  atSeconds: number;
}

/**
 * A dead letter's headers, as RabbitMQ 3.x writes them: `x-death` holds one entry per queue and reason, counted,
 * newest first; `x-first-death-*` are set once and `x-last-death-*` every time.
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
  });
  headers['x-death'] = deaths;
  headers['x-first-death-queue'] ??= death.queue;
  headers['x-first-death-reason'] ??= death.reason;
  headers['x-first-death-exchange'] ??= death.exchange;
  headers['x-last-death-queue'] = death.queue;
  headers['x-last-death-reason'] = death.reason;
  headers['x-last-death-exchange'] = death.exchange;
  return headers;
}
