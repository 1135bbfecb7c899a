import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import {
  Consume,
  MessageType,
  ReliableMessagingModule,
  type ReliableMessagingModuleOptions,
} from 'nestjs-reliable-messaging';
import { HealthModule } from '../apps/order-service/src/health/health.module';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { closeConnectionsNamed, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'health.pinged', idempotencyKey: (m: Pinged) => `ping:${m.id}` })
class Pinged {
  @IsString() id!: string;
}

/** Holds every ping until the spec releases it, so a handler can be kept in flight. */
@Injectable()
class PingConsumer {
  static queue = uniqueQueue('health');
  started = 0;
  private release?: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.release = resolve));

  @Consume({ queue: PingConsumer.queue })
  async onPing(_event: Pinged): Promise<void> {
    this.started++;
    await this.gate;
  }

  releaseAll(): void {
    this.release?.();
  }
}

/** One check of a health response: its status and whatever data it reports. */
type CheckResult = { status: string } & Record<string, unknown>;

interface Probe {
  status: number;
  body: {
    status: string;
    info?: Record<string, CheckResult>;
    error?: Record<string, CheckResult>;
    details: Record<string, CheckResult>;
  };
  text: string;
}

/** The sample app's health endpoints on a real HTTP server, over the real broker and PostgreSQL. */
describe('health endpoints', () => {
  let broker: TestBroker;
  let db: MessagingDatabase;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    db = await createMessagingDatabase();
  });

  afterAll(async () => {
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  async function startApp(options: Partial<ReliableMessagingModuleOptions> = {}) {
    const exchange = broker.name('health.events');
    const connectionName = `${broker.prefix}.health-${Math.random().toString(16).slice(2, 6)}`;
    broker.track(exchange, `${exchange}.dead-letter`, PingConsumer.queue, `${PingConsumer.queue}.dlq`);

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange,
          connectionName,
          dataSource: db.dataSource,
          metricsRegistry: new Registry(),
          ...options,
        }),
        HealthModule,
      ],
      providers: [PingConsumer],
    })
    class HealthSpecModule {}

    const app: INestApplication<Server> = await NestFactory.create(HealthSpecModule, { logger: false });
    await app.listen(0, '127.0.0.1');
    const url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    const probe = async (path: string): Promise<Probe> => {
      const response = await fetch(`${url}${path}`);
      const text = await response.text();
      return { status: response.status, body: JSON.parse(text) as Probe['body'], text };
    };
    return { app, exchange, connectionName, probe, consumer: app.get(PingConsumer) };
  }

  describe('while running', () => {
    let running: Awaited<ReturnType<typeof startApp>>;

    beforeAll(async () => {
      // A reconnect delay of 2 to 4 s (with the jitter pinned high below) keeps the app disconnected long enough
      // for a probe to see it, also on a loaded machine; the module's default is a few hundred milliseconds.
      running = await startApp({ reconnect: { initialDelayMs: 2_000, maxDelayMs: 4_000 } });
    });
    afterAll(async () => {
      running.consumer.releaseAll();
      await running?.app.close();
    });

    it('reports ready with every check up, and never shows a URL or a credential', async () => {
      const ready = await running.probe('/health/ready');

      expect(ready.status).toBe(200);
      expect(ready.body.status).toBe('ok');
      expect(Object.keys(ready.body.details).sort()).toEqual(
        ['broker', 'consumers', 'database', 'deadLetters', 'outbox', 'shutdown'].sort(),
      );
      expect(ready.body.details.broker).toEqual({
        status: 'up',
        consume: { connected: true, blocked: false },
        publish: { connected: true, blocked: false },
      });
      expect(ready.body.details.consumers).toEqual({
        status: 'up',
        consumers: [{ queue: PingConsumer.queue, consuming: true, inFlight: 0 }],
      });
      expect(ready.body.details.outbox).toMatchObject({ status: 'up', pending: 0, parked: 0 });
      expect(ready.text).not.toMatch(/:\/\/|guest|postgres@|rm_e2e_/);
    });

    it('reports live without consulting the broker or the database', async () => {
      const live = await running.probe('/health/live');

      expect(live.status).toBe(200);
      expect(live.body.details).toEqual({ handlers: { status: 'up' } });
    });

    it('stays ready but degraded while dead letters wait, with their depth per dead-letter queue', async () => {
      await broker.publishRaw({ exchange: running.exchange, routingKey: 'health.pinged' }, 'not json', {
        type: 'health.pinged',
        messageId: 'broken',
      });
      let ready!: Probe;
      await waitFor(
        'a degraded readiness',
        async () => (ready = await running.probe('/health/ready')).body.status === 'degraded',
      );

      expect(ready.status).toBe(200);
      expect(ready.body.details.deadLetters).toEqual({
        status: 'degraded',
        queues: { [`${PingConsumer.queue}.dlq`]: { depth: 1, oldestAgeSeconds: expect.any(Number) } },
        message: '1 dead-lettered message(s) await inspection',
      });
      await broker.getAll(`${PingConsumer.queue}.dlq`);
    });

    it('stays ready but degraded, and live, while the broker connections are down: requests need only the outbox', async () => {
      // NOTE: the reconnect delay is drawn with full jitter; pinning the draw high keeps the app disconnected
      // long enough to observe it.
      const random = jest.spyOn(Math, 'random').mockReturnValue(0.99);
      try {
        expect(await closeConnectionsNamed(running.connectionName)).toBe(2);
        let ready!: Probe;
        await waitFor(
          'the consumer connection reported down',
          async () => {
            ready = await running.probe('/health/ready');
            return (ready.body.details.broker.consume as { connected: boolean }).connected === false;
          },
          { intervalMs: 10 },
        );

        expect(ready.status).toBe(200);
        expect(ready.body.status).toBe('degraded');
        expect(ready.body.details.broker).toMatchObject({
          status: 'degraded',
          consume: { connected: false, blocked: false },
          message: expect.stringMatching(/^not connected \((consume|consume, publish)\); reconnecting$/),
        });
        expect(ready.body.details.consumers.status).toBe('degraded');
        expect((await running.probe('/health/live')).status).toBe(200);
      } finally {
        random.mockRestore();
      }
      await waitFor(
        'readiness back to ok',
        async () => (await running.probe('/health/ready')).body.status === 'ok',
      );
    });
  });

  describe('during shutdown', () => {
    it('fails readiness from the moment shutdown begins, while in-flight work drains and liveness stays up', async () => {
      const { app, probe, consumer, exchange } = await startApp({ shutdownTimeoutMs: 10_000 });
      await broker.publishRaw({ exchange, routingKey: 'health.pinged' }, JSON.stringify({ id: 'p1' }), {
        type: 'health.pinged',
        messageId: 'p1',
        contentType: 'application/json',
      });
      await waitFor('the ping in flight', () => consumer.started === 1);
      expect((await probe('/health/ready')).status).toBe(200);

      const closing = app.close();
      let ready!: Probe;
      await waitFor('readiness to fail', async () => (ready = await probe('/health/ready')).status === 503);

      expect(ready.body.error?.shutdown).toEqual({ status: 'down', message: 'shutting down' });
      expect((await probe('/health/live')).status).toBe(200);
      consumer.releaseAll();
      await closing;
      expect(await broker.queueDepth(PingConsumer.queue)).toBe(0);
    });
  });
});
