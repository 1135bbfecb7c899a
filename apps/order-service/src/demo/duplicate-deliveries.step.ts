import type { Options } from 'amqplib';
import { metricTotal } from './app-metrics';
import type { DemoContext, DemoStep } from './demo-step';
import { pollUntil } from './poll-until';

/** How long the step waits for the app to relay the originals, and then to skip every copy. */
const WAIT_MS = 20_000;

interface RelayedMessage {
  orderId: string;
  exchange: string;
  routingKey: string;
  properties: Options.Publish;
  body: Buffer;
}

/**
 * Takes the OrderPlaced of the first orders placed through the API, exactly as the app's outbox relayed them (same
 * message id, idempotency key and body), and publishes each again `copies` times straight to the broker, as a
 * redelivery or a relay re-send would. Payment's inbox must skip every copy: each order paid once, with one
 * OrderPaid in the outbox.
 */
export class DuplicateDeliveriesStep implements DemoStep {
  constructor(
    private readonly orders: number,
    private readonly copies = 2,
  ) {}

  get title(): string {
    return (
      `the OrderPlaced of ${this.orders} of those orders published ${this.copies} more times straight to the ` +
      'broker (same message id and idempotency key, as a redelivery)'
    );
  }

  async run({ api, channel, database, ledger, names, signal }: DemoContext): Promise<void> {
    const relayed = await pollUntil(() => this.relayedOrderPlaced(database), WAIT_MS, signal);
    if (!relayed) {
      ledger.checks.push({
        name: 'duplicates',
        verify: async () => ({
          summary: 'not run',
          problem: `the OrderPlaced of ${this.orders} orders were not relayed within ${WAIT_MS / 1000} s`,
        }),
      });
      return;
    }
    const saga = names.queues.sagaPlaced;
    const before = metricTotal(await api.metrics(signal), 'rm_messages_deduplicated_total', {
      queue: saga,
    });
    for (let copy = 0; copy < this.copies; copy++) {
      for (const message of relayed) {
        channel.publish(message.exchange, message.routingKey, message.body, message.properties);
      }
    }
    await channel.waitForConfirms();
    const expected = before + relayed.length * this.copies;
    const orderIds = relayed.map((message) => message.orderId);
    // The copies are handled among the orders' traffic; wait for them, so the check sees their outcome.
    await pollUntil(
      async () => {
        const page = await api.metrics(signal);
        return metricTotal(page, 'rm_messages_deduplicated_total', { queue: saga }) >= expected || undefined;
      },
      WAIT_MS,
      signal,
    );

    ledger.checks.push({
      name: 'duplicates',
      verify: async () => {
        const skipped =
          metricTotal(await api.metrics(), 'rm_messages_deduplicated_total', { queue: saga }) - before;
        const { rows } = await database.query<{ paid_events: string; applied: string }>(
          `SELECT
             (SELECT count(*) FROM rm_outbox WHERE properties->>'type' = 'order.paid' AND ordering_key = ANY($1))
               AS paid_events,
             (SELECT count(*) FROM rm_inbox WHERE consumer = $2 AND idempotency_key = ANY($3)) AS applied`,
          [orderIds, saga, orderIds.map((id) => `order-placed:${id}`)],
        );
        const paidEvents = Number(rows[0].paid_events);
        const applied = Number(rows[0].applied);
        const sent = relayed.length * this.copies;
        const summary =
          `${sent} copies of ${relayed.length} OrderPlaced: ${skipped} skipped by the order saga's inbox ` +
          `(rm_messages_deduplicated_total), ${applied} applied, ${paidEvents} OrderPaid in the outbox`;
        const problems: string[] = [];
        if (skipped !== sent)
          problems.push(`the order saga's inbox skipped ${skipped} of the ${sent} copies`);
        if (applied !== relayed.length) problems.push(`${applied} inbox rows for ${relayed.length} orders`);
        if (paidEvents !== relayed.length) {
          problems.push(
            `${paidEvents} OrderPaid in the outbox for ${relayed.length} orders, expected one each`,
          );
        }
        return { summary, problem: problems.length > 0 ? problems.join('; ') : undefined };
      },
    });
  }

  /** The first `orders` OrderPlaced the app relayed, or undefined while fewer are relayed. */
  private async relayedOrderPlaced(database: DemoContext['database']): Promise<RelayedMessage[] | undefined> {
    const { rows } = await database.query<{
      ordering_key: string;
      exchange: string;
      routing_key: string;
      properties: Options.Publish;
      body: Buffer;
    }>(
      `SELECT ordering_key, exchange, routing_key, properties, body FROM rm_outbox
        WHERE properties->>'type' = 'order.placed' AND status = 'published' ORDER BY id LIMIT $1`,
      [this.orders],
    );
    if (rows.length < this.orders) return undefined;
    return rows.map((row) => ({
      orderId: row.ordering_key,
      exchange: row.exchange,
      routingKey: row.routing_key,
      properties: row.properties,
      body: row.body,
    }));
  }
}
