import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BadRequestException, Controller, Get, Module, Param, type INestApplication } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/test-database';
import { ErrorResponsesFilter } from './error-responses.filter';

/** Real errors, made once against a real PostgreSQL server; the routes below throw them. */
const errors: Record<string, unknown> = {};

@Controller('fail')
class FailingController {
  @Get(':kind')
  fail(@Param('kind') kind: string): never {
    if (kind === 'validation') throw new BadRequestException('customerId must be a string');
    throw errors[kind];
  }
}

@Module({
  controllers: [FailingController],
  providers: [{ provide: APP_FILTER, useClass: ErrorResponsesFilter }],
})
class FailingModule {}

/**
 * The order service's answers to failures that are not the client's input, against errors a real PostgreSQL
 * server raised: 503 with Retry-After, 409, 500; logged by class and code, never with the data in the message.
 */
describe('ErrorResponsesFilter', () => {
  let database: TestDatabase;
  let app: INestApplication<Server>;
  let baseUrl: string;
  const logged: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const dataSource = await new DataSource({ type: 'postgres', url: database.url }).initialize();
    try {
      await dataSource.query('CREATE TABLE customers (id text PRIMARY KEY)');
      await dataSource.query(`INSERT INTO customers (id) VALUES ('customer-private-1')`);
      errors.unique = await dataSource
        .query(`INSERT INTO customers (id) VALUES ('customer-private-1')`)
        .catch((error: unknown) => error);
      errors.syntax = await dataSource
        .query(`SELECT * FROM customers WHERE id = 'customer-private-2' AND nonsense`)
        .catch((error: unknown) => error);
      errors.terminated = await dataSource
        .query('SELECT pg_terminate_backend(pg_backend_pid())')
        .catch((error: unknown) => error);
    } finally {
      await dataSource.destroy();
    }
    errors.refused = await new DataSource({ type: 'postgres', url: 'postgres://postgres@127.0.0.1:1/none' })
      .initialize()
      .catch((error: unknown) => error);
    const capture = (message: unknown) => void logged.push(String(message));
    app = await NestFactory.create(FailingModule, {
      logger: { log: capture, warn: capture, error: capture, debug: capture, verbose: capture },
    });
    await app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await app?.close();
    await database?.drop();
  });

  it.each([
    ['the database refusing connections', 'refused', 503, '5', /the database is unavailable/],
    ['the session terminated by the server', 'terminated', 503, '5', /the database is unavailable/],
    ['a unique violation', 'unique', 409, null, /conflicts with an existing record/],
    ['any other query failure', 'syntax', 500, null, /Internal server error/],
    ["the client's own mistake", 'validation', 400, null, /customerId must be a string/],
  ])('answers %s (%s) with %i', async (_case, kind, status, retryAfter, message) => {
    const response = await fetch(`${baseUrl}/fail/${kind}`);

    expect(response.status).toBe(status);
    expect(response.headers.get('retry-after')).toBe(retryAfter);
    expect(JSON.stringify(await response.json())).toMatch(message);
  });

  it('logs a failure by its class and code and route, never the data in its message', () => {
    const lines = logged.filter((line) => line.startsWith('GET /fail/:kind'));
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/the database is unavailable \(\w+ ECONNREFUSED\); answered 503$/),
        expect.stringMatching(/conflicts with an existing row \(QueryFailedError 23505\); answered 409$/),
        expect.stringMatching(/failed \(QueryFailedError 42\w+\); answered 500$/),
      ]),
    );
    expect(logged.join('\n')).not.toMatch(/customer-private/);
  });
});
