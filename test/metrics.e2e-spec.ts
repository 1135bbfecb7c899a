import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsIn, IsString } from 'class-validator';
import { Registry } from 'prom-client';
import { Consume, MessageType, NonRetryableError } from 'nestjs-reliable-messaging';
import { InboxPruner, OutboxPruner } from 'nestjs-reliable-messaging/operations';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

const TYPE = 'shop.invoice-issued';

@MessageType({ type: TYPE, idempotencyKey: (m: InvoiceIssued) => `invoice:${m.id}` })
class InvoiceIssued {
  @IsString() id!: string;
  @IsIn(['ok', 'refuse']) outcome!: 'ok' | 'refuse';
}

const QUEUE = uniqueQueue('metrics');

@Injectable()
class InvoiceConsumer {
  handled = 0;

  @Consume({ queue: QUEUE })
  async onInvoice(event: InvoiceIssued): Promise<void> {
    if (event.outcome === 'refuse') throw new NonRetryableError('the invoice is for a closed account');
    this.handled++;
  }
}

const invoice = (id: string, outcome: 'ok' | 'refuse' = 'ok') =>
  Object.assign(new InvoiceIssued(), { id, outcome });

/** What the module reports to Prometheus while it handles real traffic on the real broker and PostgreSQL. */
describe('metrics', () => {
  let broker: TestBroker;
  let db: MessagingDatabase;
  let app: MessagingTestApp;
  const registry = new Registry();

  /** The samples of a histogram's `_count` series whose labels include `labels`, summed. */
  async function histogramCount(name: string, labels: Record<string, string> = {}): Promise<number> {
    const samples = (await registry.getSingleMetric(name)!.get()).values as Array<{
      metricName?: string;
      labels: Record<string, string | number>;
      value: number;
    }>;
    return samples
      .filter((sample) => sample.metricName === `${name}_count`)
      .filter((sample) => Object.entries(labels).every(([key, label]) => sample.labels[key] === label))
      .reduce((sum, sample) => sum + sample.value, 0);
  }

  /** The value of one series: the sum over series whose labels include `labels`. */
  async function value(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
    const metric = registry.getSingleMetric(name);
    if (!metric) throw new Error(`${name} is not registered`);
    const matching = (await metric.get()).values.filter((sample) =>
      Object.entries(labels).every(([key, label]) => sample.labels[key] === label),
    );
    return matching.length === 0 ? undefined : matching.reduce((sum, sample) => sum + sample.value, 0);
  }

  beforeAll(async () => {
    broker = await TestBroker.connect();
    db = await createMessagingDatabase();
    app = await MessagingTestApp.start(broker, {
      providers: [InvoiceConsumer],
      options: { dataSource: db.dataSource, metricsRegistry: registry },
    });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('counts handled, failed and dead-lettered messages, times handlers and confirms, and reads queue gauges on scrape', async () => {
    const publisher = app.publisher;
    const exchange = broker.name('events');
    for (const id of ['a', 'b', 'c']) await publisher.publishNow(invoice(id));
    await db.dataSource.transaction(async (manager) => {
      await publisher.publish(invoice('d'), { manager });
      await publisher.publish(invoice('e'), { manager });
    });
    await publisher.publishNow(invoice('f', 'refuse'));
    await broker.publishRaw({ exchange, routingKey: TYPE }, '{"id": "g", ', { type: TYPE, messageId: 'g' });
    await broker.publishRaw({ exchange, routingKey: TYPE }, '{"id":"h","outcome":"ok"}', {
      type: `forged-${Date.now()}`,
      messageId: 'h',
    });

    await waitFor(
      '8 deliveries settled',
      async () =>
        ((await value('rm_messages_consumed_total')) ?? 0) +
          ((await value('rm_messages_failed_total')) ?? 0) ===
        8,
    );
    await waitFor(
      'both outbox rows relayed, and a backlog reading (cached for a second) taken after that',
      async () =>
        (await value('rm_outbox_relayed_total', { outcome: 'published' })) === 2 &&
        (await value('rm_outbox_pending')) === 0,
    );
    await waitFor(
      '3 dead letters counted by the broker',
      async () => (await value('rm_dead_letter_depth', { queue: QUEUE })) === 3,
    );

    expect(app.get(InvoiceConsumer).handled).toBe(5);
    expect(await value('rm_messages_consumed_total', { queue: QUEUE, type: TYPE })).toBe(5);
    expect(await value('rm_messages_failed_total', { queue: QUEUE, type: TYPE })).toBe(2);
    expect(await value('rm_messages_failed_total', { queue: QUEUE, type: 'other' })).toBe(1);
    expect(await value('rm_messages_dead_lettered_total', { queue: QUEUE, reason: 'non-retryable' })).toBe(1);
    expect(await value('rm_messages_dead_lettered_total', { queue: QUEUE, reason: 'malformed-json' })).toBe(
      1,
    );
    expect(
      await value('rm_messages_dead_lettered_total', {
        queue: QUEUE,
        type: 'other',
        reason: 'unknown-message-type',
      }),
    ).toBe(1);
    expect({
      success: await histogramCount('rm_handler_duration_seconds', { queue: QUEUE, outcome: 'success' }),
      failure: await histogramCount('rm_handler_duration_seconds', { queue: QUEUE, outcome: 'failure' }),
    }).toEqual({ success: 5, failure: 3 });
    expect(await histogramCount('rm_consumer_lag_seconds', { queue: QUEUE })).toBe(8);
    // 4 direct publishes, 2 relayed from the outbox, 3 dead letters.
    expect(await histogramCount('rm_publish_confirm_duration_seconds', { outcome: 'confirmed' })).toBe(
      4 + 2 + 3,
    );
    expect(await value('rm_queue_depth', { queue: QUEUE })).toBe(0);
    expect(await value('rm_queue_consumers', { queue: QUEUE })).toBe(1);
    expect(await value('rm_consumer_up', { queue: QUEUE })).toBe(1);
    expect(await value('rm_consumer_in_flight', { queue: QUEUE })).toBe(0);
    expect(await value('rm_broker_connected', { connection: 'consume' })).toBe(1);
    expect(await value('rm_broker_connected', { connection: 'publish' })).toBe(1);
    expect(await value('rm_broker_blocked')).toBe(0);
    expect(await value('rm_outbox_pending')).toBe(0);
    expect(await value('rm_outbox_oldest_age_seconds')).toBe(0);
    expect(await value('rm_outbox_relayed_total', { outcome: 'published' })).toBe(2);
    expect(await value('rm_metrics_collect_errors_total')).toBeUndefined();
  });

  it('keeps label values bounded: 50 forged message types make one `other` series, not 50', async () => {
    const exchange = broker.name('events');
    const before = (await value('rm_messages_failed_total', { queue: QUEUE, type: 'other' })) ?? 0;
    for (let i = 0; i < 50; i++) {
      await broker.publishRaw({ exchange, routingKey: TYPE }, '{}', {
        type: `forged-${i}-${Date.now()}`,
        messageId: `x${i}`,
      });
    }
    await waitFor(
      '50 more failures',
      async () => (await value('rm_messages_failed_total', { queue: QUEUE, type: 'other' })) === before + 50,
    );

    const types = new Set(
      (await registry.getSingleMetric('rm_messages_failed_total')!.get()).values.map(
        (sample) => sample.labels.type,
      ),
    );
    expect([...types].sort()).toEqual(['other', TYPE]);
  });

  it('counts the rows each pruner deletes as it goes, in rm_pruned_rows_total', async () => {
    await db.dataSource.query(
      `INSERT INTO rm_inbox (consumer, idempotency_key, message_id, message_type, processed_at) ` +
        `SELECT 'an-old-consumer', 'key-' || n, 'message-' || n, 'old.type', now() - interval '30 days' ` +
        `FROM generate_series(1, 2500) n`,
    );
    await db.dataSource.query(
      `INSERT INTO rm_outbox (message_id, exchange, routing_key, properties, body, status, published_at) ` +
        `SELECT gen_random_uuid(), 'events', 'old.type', '{}', '\\x7b7d', 'published', now() - interval '30 days' ` +
        `FROM generate_series(1, 1200)`,
    );
    const before = {
      inbox: (await value('rm_pruned_rows_total', { kind: 'inbox' })) ?? 0,
      outbox: (await value('rm_pruned_rows_total', { kind: 'outbox' })) ?? 0,
    };

    // Batches of 1,000: the inbox's 2,500 rows go in three, each counted as it commits.
    expect(await app.get(InboxPruner).pruneNow()).toBe(2500);
    expect(await app.get(OutboxPruner).pruneNow()).toBe(1200);

    expect(await value('rm_pruned_rows_total', { kind: 'inbox' })).toBe(before.inbox + 2500);
    expect(await value('rm_pruned_rows_total', { kind: 'outbox' })).toBe(before.outbox + 1200);
  });

  it('renders a Prometheus exposition whose every sample line is well formed', async () => {
    const exposition = await registry.metrics();
    const samples = exposition.split('\n').filter((line) => line !== '' && !line.startsWith('#'));

    expect(samples.length).toBeGreaterThan(20);
    for (const line of samples)
      expect(line).toMatch(/^rm_[a-z_]+(\{[^}]*\})? -?[0-9.e+-]+$|^rm_[a-z_]+(\{[^}]*\})? (NaN|\+Inf)$/);
  });
});
