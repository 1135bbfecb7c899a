import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OrderApiClient } from './order-api.client';

/** An app that answers 503 ("the database is unavailable") to the first `unavailable` requests of each path. */
function flakyApp(unavailable: number): {
  server: Server;
  requests: Array<{ url: string; headers: IncomingHttpHeaders }>;
} {
  const requests: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer((request, response) => {
    requests.push({ url: request.url ?? '', headers: request.headers });
    request.resume();
    const seen = requests.filter((each) => each.url === request.url).length;
    if (seen <= unavailable) {
      response.writeHead(503, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ message: 'the database is unavailable; try again shortly', statusCode: 503 }),
      );
      return;
    }
    response.writeHead(request.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(request.method === 'POST' ? { id: 'o-1', status: 'placed' } : { orders: 1 }));
  });
  return { server, requests };
}

describe('the demo’s order API client', () => {
  const app = flakyApp(2);
  let client: OrderApiClient;

  beforeAll(async () => {
    await new Promise<void>((resolve) => app.server.listen(0, '127.0.0.1', resolve));
    client = new OrderApiClient(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
  });

  afterAll(async () => {
    await new Promise((resolve) => app.server.close(resolve));
  });

  it('places an order through two 503s, each try with the same Idempotency-Key', async () => {
    const placed = await client.placeOrder({ customerId: 'c-1', items: [] });

    expect(placed).toEqual({ status: 201, body: { id: 'o-1', status: 'placed' } });
    const posts = app.requests.filter((each) => each.url === '/orders');
    expect(posts).toHaveLength(3);
    const keys = new Set(posts.map((each) => each.headers['idempotency-key']));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reads the stats through two 503s', async () => {
    expect(await client.stats()).toEqual({ orders: 1 });
    expect(app.requests.filter((each) => each.url === '/orders/stats')).toHaveLength(3);
  });
});
