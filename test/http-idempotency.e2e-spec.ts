import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Body, Controller, HttpCode, Module, Post, Put, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { IdempotencyModule, Idempotent } from 'nestjs-reliable-messaging/http';
import { CapturingLogger } from './support/messaging-app';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { TestBroker } from './support/test-broker';

/** How many times each handler ran, by the body's `ref`. */
const runs = new Map<string, number>();
const ran = (ref: string): number => {
  const count = (runs.get(ref) ?? 0) + 1;
  runs.set(ref, count);
  return count;
};

@Controller()
class TransfersController {
  @Post('required')
  @Idempotent({ required: true })
  required(@Body() body: { ref: string }) {
    return { ref: body.ref, run: ran(body.ref) };
  }

  @Put('replace')
  @HttpCode(200)
  @Idempotent()
  replace(@Body() body: { ref: string }) {
    return { ref: body.ref, run: ran(body.ref) };
  }

  /** Fails on its first run for a ref, succeeds after. */
  @Post('flaky')
  @Idempotent()
  flaky(@Body() body: { ref: string }) {
    if (ran(body.ref) === 1) throw new Error('the first attempt fails');
    return { ref: body.ref, ok: true };
  }

  @Post('transfers/a')
  @Idempotent({ scope: 'transfers' })
  a(@Body() body: { ref: string }) {
    return { ref: body.ref, route: 'a' };
  }

  @Post('transfers/b')
  @Idempotent({ scope: 'transfers' })
  b(@Body() body: { ref: string }) {
    return { ref: body.ref, route: 'b' };
  }
}

/**
 * IdempotencyInterceptor in a Nest app of its own, on the messaging module's DataSource and the real broker,
 * without nestjs-cls (which cannot load under Jest): the options of `@Idempotent()`, the status replayed, a failed
 * handler keeping no key, and the startup warning that the handler's writes cannot join the key's transaction.
 */
describe('@Idempotent() in a Nest app on the module dataSource', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: INestApplication<Server>;
  const logger = new CapturingLogger();
  let baseUrl: string;

  async function send(method: string, path: string, body: unknown, key?: string) {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      replayed: response.headers.get('idempotent-replayed'),
      body: (await response.json()) as Record<string, unknown>,
    };
  }

  beforeAll(async () => {
    db = await createMessagingDatabase();
    broker = await TestBroker.connect();
    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange: broker.name('events'),
          connectionName: broker.prefix,
          dataSource: db.dataSource,
        }),
        IdempotencyModule.forRoot({ lockTimeoutMs: 500, prune: false }),
      ],
      controllers: [TransfersController],
    })
    class SpecModule {}
    app = await NestFactory.create<INestApplication<Server>>(SpecModule, {
      logger,
      abortOnError: false,
      forceCloseConnections: true,
    });
    await app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('answers 400 to a request without a key on a required route, and does not run it', async () => {
    const ref = randomUUID();

    const answer = await send('POST', '/required', { ref });

    expect(answer).toMatchObject({ status: 400, body: { message: ['Idempotency-Key header is required'] } });
    expect(runs.get(ref)).toBeUndefined();
  });

  it("replays the route's own status (200 from @HttpCode) and body, running the handler once", async () => {
    const ref = randomUUID();
    const key = randomUUID();

    const first = await send('PUT', '/replace', { ref }, key);
    const retry = await send('PUT', '/replace', { ref }, key);

    expect(first).toEqual({ status: 200, replayed: null, body: { ref, run: 1 } });
    expect(retry).toEqual({ status: 200, replayed: 'true', body: { ref, run: 1 } });
    expect(runs.get(ref)).toBe(1);
  });

  it('keeps no key for a handler that threw: the retry with the same key runs it again', async () => {
    const ref = randomUUID();
    const key = randomUUID();

    const failed = await send('POST', '/flaky', { ref }, key);
    const retried = await send('POST', '/flaky', { ref }, key);
    const replayed = await send('POST', '/flaky', { ref }, key);

    expect(failed.status).toBe(500);
    expect(retried).toEqual({ status: 201, replayed: null, body: { ref, ok: true } });
    expect(replayed).toEqual({ status: 201, replayed: 'true', body: { ref, ok: true } });
    expect(runs.get(ref)).toBe(2);
  });

  it('answers 422 to a key used on another route of the same scope, naming the first request', async () => {
    const key = randomUUID();
    const ref = randomUUID();

    await send('POST', '/transfers/a', { ref }, key);
    const other = await send('POST', '/transfers/b', { ref }, key);

    expect(other.status).toBe(422);
    expect(other.body.message).toEqual([expect.stringContaining('different request (POST /transfers/a')]);
  });

  it("warns at startup that without nestjs-cls the handler's writes cannot join the key's transaction", () => {
    expect(logger.lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        context: 'Idempotency',
        message: expect.stringContaining('nestjs-cls does not propagate'),
      }),
    );
  });
});
