import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
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
import { uniqueQueue } from './support/messaging-app';
import { TcpProxy } from './support/tcp-proxy';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'outage.noted', idempotencyKey: (m: Noted) => `noted:${m.id}` })
class Noted {
  @IsString() id!: string;
}

@Injectable()
class NoteConsumer {
  static queue = uniqueQueue('outage');

  @Consume({ queue: NoteConsumer.queue })
  async onNoted(_event: Noted): Promise<void> {}
}

interface Probe {
  status: number;
  body: { status: string; details: Record<string, { status: string } & Record<string, unknown>> };
}

/** How an app is configured, and whether a broker outage must take it out of service. */
interface Case {
  name: string;
  outbox: boolean;
  options: Partial<ReliableMessagingModuleOptions>;
  readyDuringOutage: boolean;
  /** What the test name says of readiness during the outage. */
  outcome: string;
}

const CASES: Case[] = [
  {
    name: 'publishes through the outbox (default)',
    outbox: true,
    options: {},
    readyDuringOutage: true,
    outcome: 'stays ready',
  },
  {
    name: 'publishes through the outbox, with readinessRequiresBroker: true',
    outbox: true,
    options: { readinessRequiresBroker: true },
    readyDuringOutage: false,
    outcome: 'goes unready',
  },
  {
    name: 'has no outbox (default)',
    outbox: false,
    options: {},
    readyDuringOutage: false,
    outcome: 'goes unready',
  },
];

/** Each app reaches the broker through a proxy of its own, which the spec cuts to simulate a broker outage. */
describe('readiness during a broker outage', () => {
  let broker: TestBroker;
  let db: MessagingDatabase;
  let proxy: TcpProxy | undefined;
  let app: INestApplication<Server> | undefined;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    db = await createMessagingDatabase();
  });

  afterEach(async () => {
    proxy?.restore();
    await app?.close();
    await proxy?.close();
    app = undefined;
    proxy = undefined;
  });

  afterAll(async () => {
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  async function startApp(setup: Case) {
    proxy = await TcpProxy.start(broker.url);
    const registry = new Registry();
    const exchange = broker.name('outage.events');
    broker.track(exchange, `${exchange}.dead-letter`, NoteConsumer.queue, `${NoteConsumer.queue}.dlq`);

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: proxy.url,
          exchange,
          connectionName: `${broker.prefix}.outage`,
          dataSource: setup.outbox ? db.dataSource : undefined,
          metricsRegistry: registry,
          reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
          ...setup.options,
        }),
        HealthModule,
      ],
      providers: [NoteConsumer],
    })
    class OutageSpecModule {}

    app = await NestFactory.create(OutageSpecModule, { logger: false });
    await app.listen(0, '127.0.0.1');
    const url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    const probe = async (path: string): Promise<Probe> => {
      const response = await fetch(`${url}${path}`);
      return { status: response.status, body: (await response.json()) as Probe['body'] };
    };
    const connected = async (connection: string): Promise<number | undefined> =>
      (await registry.getSingleMetric('rm_broker_connected')!.get()).values.find(
        (sample) => sample.labels.connection === connection,
      )?.value;
    return { proxy, probe, connected };
  }

  it.each(CASES)(
    'an app that $name $outcome while the broker is unreachable, shows the outage in health and metrics, and is ready again after',
    async (setup) => {
      const { proxy, probe, connected } = await startApp(setup);
      expect((await probe('/health/ready')).body.status).toBe('ok');

      proxy.cut();
      let ready!: Probe;
      await waitFor('no broker connection reported up', async () => {
        ready = await probe('/health/ready');
        const broker = ready.body.details.broker;
        return broker.status !== 'up' && !JSON.stringify(broker).includes('"connected":true');
      });

      expect(ready.status).toBe(setup.readyDuringOutage ? 200 : 503);
      expect(ready.body.status).toBe(setup.readyDuringOutage ? 'degraded' : 'error');
      expect(ready.body.details.broker).toEqual({
        status: setup.readyDuringOutage ? 'degraded' : 'down',
        consume: { connected: false, blocked: false },
        publish: { connected: false, blocked: false },
        message: 'not connected (consume, publish); reconnecting',
      });
      expect(ready.body.details.consumers.status).toBe(setup.readyDuringOutage ? 'degraded' : 'down');
      if (setup.outbox) expect(ready.body.details.database.status).toBe('up');
      expect(await connected('consume')).toBe(0);
      expect(await connected('publish')).toBe(0);
      expect((await probe('/health/live')).status).toBe(200);

      proxy.restore();
      await waitFor(
        'readiness back to ok',
        async () => (ready = await probe('/health/ready')).body.status === 'ok',
        { timeoutMs: 20_000 },
      );
      expect(ready.status).toBe(200);
      expect(ready.body.details.broker.status).toBe('up');
      expect(await connected('consume')).toBe(1);
      expect(await connected('publish')).toBe(1);
    },
  );
});
