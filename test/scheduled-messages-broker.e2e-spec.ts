import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TerminusModule } from '@nestjs/terminus';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import {
  ConfigurationError,
  MessageType,
  type ReliableMessagingModuleOptions,
} from 'nestjs-reliable-messaging';
import { MessagingHealth, ReliableMessagingHealthModule } from 'nestjs-reliable-messaging/health';
import { DeadLetterOperations, ReliableMessagingAdminModule } from 'nestjs-reliable-messaging-admin';
import { DeadLetterMonitor, delayLevelNames, republishQueueName } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'shop.broker-reminder', idempotencyKey: (m: Reminder) => `reminder:${m.id}` })
class Reminder {
  @IsString() id!: string;
}

const reminder = (id: string): Reminder => Object.assign(new Reminder(), { id });

/** Every reminder the audit queue got, with when this spec saw it and the headers it came with. */
class Audit {
  readonly seen = new Map<string, number[]>();
  readonly headers = new Map<string, Record<string, unknown>>();

  constructor(
    private readonly broker: TestBroker,
    readonly queue: string,
  ) {}

  async drain(): Promise<void> {
    for (const message of await this.broker.getAll(this.queue)) {
      const { id } = JSON.parse(message.content.toString()) as Reminder;
      this.seen.set(id, [...(this.seen.get(id) ?? []), Date.now()]);
      this.headers.set(id, message.properties.headers ?? {});
    }
  }

  copies(id: string): number {
    return this.seen.get(id)?.length ?? 0;
  }

  async waitFor(id: string): Promise<void> {
    await waitFor(
      () => `reminder ${id} on the audit queue (saw ${[...this.seen.keys()].join(', ')})`,
      async () => {
        await this.drain();
        return this.copies(id) > 0;
      },
      { timeoutMs: 15_000, intervalMs: 20 },
    );
  }
}

/** Resolves once the clock has passed `at`. */
function timePassed(at: number): Promise<void> {
  return waitFor(`the clock past ${new Date(at).toISOString()}`, () => Date.now() > at, {
    timeoutMs: Math.max(1000, at - Date.now() + 1000),
    intervalMs: 20,
  });
}

/** A counter's value in `registry`, by its labels. */
async function counted(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  const match = values.find((value) =>
    Object.entries(labels).every(([key, wanted]) => value.labels[key] === wanted),
  );
  return match?.value ?? 0;
}

const MAX_DELAY_MS = 60_000;

describe('scheduled messages without an outbox: the delay levels and the republisher', () => {
  let broker: TestBroker;
  let exchange: string;
  let audit: Audit;
  let registry: Registry;
  let app: MessagingTestApp | undefined;
  const options = (): Partial<ReliableMessagingModuleOptions> => ({
    exchange,
    scheduling: { brokerDelays: true, maxDelayMs: MAX_DELAY_MS },
    metricsRegistry: registry,
  });

  beforeAll(async () => {
    broker = await TestBroker.connect();
    exchange = broker.name('events');
    const queue = broker.name('audit');
    const channel = await broker.openChannel();
    await channel.assertExchange(exchange, 'topic', { durable: true });
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'classic' } });
    await channel.bindQueue(queue, exchange, 'shop.#');
    audit = new Audit(broker, queue);
    registry = new Registry();
    app = await MessagingTestApp.start(broker, {
      options: options(),
      imports: [TerminusModule, ReliableMessagingHealthModule, ReliableMessagingAdminModule],
    });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  it('sends a message delayed 1.5 s once its due time has passed, once, confirmed into the levels before publish() resolves', async () => {
    const dueAt = Date.now() + 1500;
    const receipt = await app!.publisher.publish(reminder('due-soon'), { deliverAt: new Date(dueAt) });
    // Confirmed by the broker: the message is in the levels (or on its way through them), not in the app.
    expect(await counted(registry, 'rm_scheduled_delayed_total')).toBe(1);
    await audit.drain();
    expect(audit.copies('due-soon')).toBe(0);

    await audit.waitFor('due-soon');
    expect(audit.seen.get('due-soon')![0]).toBeGreaterThanOrEqual(dueAt);
    const headers = audit.headers.get('due-soon')!;
    expect(Date.parse(headers['rm-scheduled-for'] as string)).toBe(dueAt);
    // The waiting's own headers stay behind.
    expect(headers['rm-retry-queue']).toBeUndefined();
    expect(headers['rm-original-exchange']).toBeUndefined();
    expect(headers['x-death']).toBeUndefined();

    await timePassed(Date.now() + 500);
    await audit.drain();
    expect(audit.copies('due-soon')).toBe(1);
    expect(await counted(registry, 'rm_scheduled_republished_total', { outcome: 'delivered' })).toBe(1);
    expect(receipt.messageId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('lists the republisher, subscribed, among the consumers readiness checks', async () => {
    type Checked = Record<
      string,
      { status: string; consumers?: Array<{ queue: string; consuming: boolean }> }
    >;
    const readiness = app!.get(MessagingHealth).readiness() as Array<() => Promise<Checked>>;
    const checks = await Promise.all(readiness.map((check) => check()));
    const consumers = checks.find((check) => 'consumers' in check)?.consumers;
    expect(consumers?.status).toBe('up');
    expect(consumers?.consumers).toContainEqual(
      expect.objectContaining({ queue: republishQueueName(exchange), consuming: true }),
    );
  });

  it('keeps a message in the broker across a restart of the app between its publish and its due time', async () => {
    const dueAt = Date.now() + 4000;
    await app!.publisher.publish(reminder('across-restart'), { delayMs: 4000 });
    await app!.close();
    app = undefined;
    // The first app is gone before the message is due: whoever sends it, it is not that app.
    expect(Date.now()).toBeLessThan(dueAt);
    await audit.drain();
    expect(audit.copies('across-restart')).toBe(0);

    app = await MessagingTestApp.start(broker, {
      options: { ...options(), metricsRegistry: new Registry() },
      imports: [ReliableMessagingAdminModule],
    });
    await audit.waitFor('across-restart');
    expect(audit.seen.get('across-restart')![0]).toBeGreaterThanOrEqual(dueAt);
    await timePassed(Date.now() + 500);
    await audit.drain();
    expect(audit.copies('across-restart')).toBe(1);
  });

  it.each([
    {
      scenario: 'a destination other than the module exchange',
      reason: 'scheduled-destination-refused',
      headers: (due: string) => ({
        'rm-scheduled-for': due,
        'rm-original-exchange': 'amq.direct',
        'rm-original-routing-key': 'shop.broker-reminder',
      }),
    },
    {
      scenario: 'a routing key other than the message type',
      reason: 'scheduled-destination-refused',
      headers: (due: string) => ({
        'rm-scheduled-for': due,
        'rm-original-exchange': exchange,
        'rm-original-routing-key': 'shop.somewhere-else',
      }),
    },
    {
      scenario: 'a due time that is not a time',
      reason: 'scheduled-header-invalid',
      headers: () => ({
        'rm-scheduled-for': 'tomorrow',
        'rm-original-exchange': exchange,
        'rm-original-routing-key': 'shop.broker-reminder',
      }),
    },
    {
      scenario: 'a due time beyond scheduling.maxDelayMs',
      reason: 'scheduled-delay-too-long',
      headers: () => ({
        'rm-scheduled-for': new Date(Date.now() + 10 * MAX_DELAY_MS).toISOString(),
        'rm-original-exchange': exchange,
        'rm-original-routing-key': 'shop.broker-reminder',
      }),
    },
  ])(
    'dead-letters a forged message with $scenario, with its reason, and goes on with the next',
    async ({ reason, headers }) => {
      const dlq = `${republishQueueName(exchange)}.dlq`;
      const id = `forged-${reason}-${Math.random().toString(16).slice(2, 8)}`;
      // Forged as anyone who may publish to the level exchanges can: straight into level 0.
      await broker.publishRaw(
        {
          exchange: delayLevelNames(exchange).at(-1)!,
          routingKey: '0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1',
        },
        JSON.stringify({ id }),
        {
          messageId: `00000000-0000-4000-8000-${Date.now().toString(16).padStart(12, '0').slice(-12)}`,
          type: 'shop.broker-reminder',
          persistent: true,
          headers: { ...headers(new Date().toISOString()), 'rm-retry-queue': republishQueueName(exchange) },
        },
      );
      const [dead] = await broker.waitForMessages(dlq, 1);
      expect(JSON.parse(dead.content.toString())).toEqual({ id });
      expect(dead.properties.headers?.['rm-dead-letter-reason']).toBe(reason);
      expect(dead.properties.headers?.['rm-dead-letter-queue']).toBe(republishQueueName(exchange));
      expect(String(dead.properties.headers?.['rm-dead-letter-error-message'])).not.toBe('');

      const next = `after-${id}`;
      await app!.publisher.publish(reminder(next), { delayMs: 200 });
      await audit.waitFor(next);
      expect(audit.copies(id)).toBe(0);
    },
  );

  it("reads the republish queue's dead letters where the consumers' are read: the monitor and the operator tools", async () => {
    const queue = republishQueueName(exchange);
    const id = `forged-visible-${Math.random().toString(16).slice(2, 8)}`;
    await broker.publishRaw(
      {
        exchange: delayLevelNames(exchange).at(-1)!,
        routingKey: '0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1',
      },
      JSON.stringify({ id }),
      {
        messageId: `00000000-0000-4000-8000-${Date.now().toString(16).padStart(12, '0').slice(-12)}`,
        type: 'shop.broker-reminder',
        persistent: true,
        headers: {
          'rm-scheduled-for': 'never',
          'rm-original-exchange': exchange,
          'rm-original-routing-key': 'shop.broker-reminder',
          'rm-retry-queue': queue,
        },
      },
    );

    // Health and the dead-letter metrics read the monitor's snapshot; the dlq tools act on knownQueues() only.
    await waitFor('the republish queue in the monitor, with its dead letter', async () => {
      const stats = await app!.get(DeadLetterMonitor).read([queue]);
      return stats[0]?.depth === 1;
    });
    expect((await app!.get(DeadLetterMonitor).snapshot()).map((each) => each.queue)).toContain(queue);
    const operations = app!.get(DeadLetterOperations);
    expect(operations.knownQueues()).toContain(queue);
    const { deadLetters } = await operations.list({ queue });
    expect(deadLetters.map((each) => each.reason)).toEqual(['scheduled-header-invalid']);
  });

  it('refuses at publish() a delay above scheduling.maxDelayMs, and a destination the republisher would not send to', async () => {
    const levelsBefore = await Promise.all(
      delayLevelNames(exchange)
        .slice(-10)
        .map((level) => broker.queueDepth(level)),
    );
    expect(levelsBefore.every((depth) => depth === 0)).toBe(true);

    await expect(
      app!.publisher.publish(reminder('too-late'), { delayMs: MAX_DELAY_MS + 1000 }),
    ).rejects.toThrow(ConfigurationError);
    await expect(
      app!.publisher.publish(reminder('too-late'), { delayMs: MAX_DELAY_MS + 1000 }),
    ).rejects.toThrow(/more than scheduling\.maxDelayMs/);
    await expect(
      app!.publisher.publish(reminder('elsewhere'), { delayMs: 1000, routingKey: 'shop.other' }),
    ).rejects.toThrow(/module's exchange/);

    const levelsAfter = await Promise.all(
      delayLevelNames(exchange)
        .slice(-10)
        .map((level) => broker.queueDepth(level)),
    );
    expect(levelsAfter.every((depth) => depth === 0)).toBe(true);
  });

  it('refuses scheduling.brokerDelays beside a dataSource at startup', async () => {
    const { error } = await MessagingTestApp.startFailing(broker, {
      options: {
        exchange: broker.name('events-refused'),
        dataSource: {} as never,
        scheduling: { brokerDelays: true },
        metricsRegistry: new Registry(),
      },
    });
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(String(error)).toMatch(/scheduling\.brokerDelays' is for apps without a dataSource/);
  });
});
