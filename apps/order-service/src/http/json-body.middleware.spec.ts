import { describe, expect, it } from '@jest/globals';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { HttpException } from '@nestjs/common';
import { JSON_BODY_LIMIT_BYTES, JsonBodyMiddleware } from './json-body.middleware';

type FakeRequest = IncomingMessage & { body?: unknown };

/** A request as the middleware sees it: method, headers and a body stream that ends after `body`. */
function request(method: string, headers: IncomingHttpHeaders, body?: string | Buffer): FakeRequest {
  const stream = new PassThrough();
  stream.end(body);
  return Object.assign(stream, { method, headers }) as unknown as FakeRequest;
}

const JSON_HEADERS = { 'content-type': 'application/json', 'content-length': '1' };

/** The body the middleware passed on, or the status and messages it refused with. */
async function outcome(req: FakeRequest): Promise<{ body?: unknown; status?: number; message?: unknown }> {
  let passed = false;
  try {
    await new JsonBodyMiddleware().use(req, undefined, () => (passed = true));
  } catch (error) {
    if (!(error instanceof HttpException)) throw error;
    return { status: error.getStatus(), message: (error.getResponse() as { message: unknown }).message };
  }
  expect(passed).toBe(true);
  return { body: req.body };
}

describe('JsonBodyMiddleware', () => {
  it.each([
    ['application/json', 'application/json'],
    ['a charset of utf-8', 'application/json; charset=UTF-8'],
    ['a +json media type', 'application/merge-patch+json'],
  ])('passes on a JSON object sent as %s', async (_what, type) => {
    expect(await outcome(request('POST', { ...JSON_HEADERS, 'content-type': type }, '{"a":1}'))).toEqual({
      body: { a: 1 },
    });
  });

  it('lets a GET without a body through untouched', async () => {
    expect(await outcome(request('GET', {}))).toEqual({ body: undefined });
  });

  it.each<[string, () => FakeRequest, number, string]>([
    ['a POST without a body', () => request('POST', {}), 400, 'body is empty; expected a JSON object'],
    ['JSON null', () => request('POST', JSON_HEADERS, 'null'), 400, 'body must be a JSON object; got null'],
    [
      'an array',
      () => request('POST', JSON_HEADERS, '[{}]'),
      400,
      'body must be a JSON object; got an array',
    ],
    ['a number', () => request('POST', JSON_HEADERS, '12'), 400, 'body must be a JSON object; got a number'],
    ['NUL in a field', () => request('POST', JSON_HEADERS, '{"a":"\\u0000"}'), 400, 'a must not contain NUL'],
    [
      'too deep',
      () => request('POST', JSON_HEADERS, '{"a":[[[[[[[[1]]]]]]]]}'),
      400,
      'a.0.0.0.0.0.0.0 nests deeper',
    ],
    [
      'text/plain',
      () => request('POST', { ...JSON_HEADERS, 'content-type': 'text/plain' }, '{}'),
      415,
      "Content-Type must be application/json; got 'text/plain'",
    ],
    ['no content type', () => request('POST', { 'content-length': '2' }, '{}'), 415, 'Content-Type must be'],
    [
      'a latin1 charset',
      () => request('POST', { ...JSON_HEADERS, 'content-type': 'application/json; charset=latin1' }, '{}'),
      415,
      "the charset of a JSON body must be utf-8; got 'latin1'",
    ],
    [
      'gzip',
      () => request('POST', { ...JSON_HEADERS, 'content-encoding': 'gzip' }, '{}'),
      415,
      "Content-Encoding 'gzip' is not supported",
    ],
    [
      'a body over the limit',
      () =>
        request(
          'POST',
          { 'content-type': 'application/json' },
          Buffer.alloc(JSON_BODY_LIMIT_BYTES + 1, 0x20),
        ),
      413,
      `body must be at most ${JSON_BODY_LIMIT_BYTES} bytes`,
    ],
    [
      'a Content-Length over the limit',
      () => request('POST', { ...JSON_HEADERS, 'content-length': String(JSON_BODY_LIMIT_BYTES + 1) }, '{}'),
      413,
      'body must be at most',
    ],
  ])('refuses %s', async (_what, req, status, message) => {
    const result = await outcome(req());
    expect(result.status).toBe(status);
    expect((result.message as string[])[0]).toContain(message);
  });

  it('refuses to pass on a body another parser read first', async () => {
    const req = request('POST', JSON_HEADERS, '{}');
    req.resume();
    await new Promise((resolve) => req.on('end', resolve));
    await expect(new JsonBodyMiddleware().use(req, undefined, () => undefined)).rejects.toThrow(
      /bodyParser: false/,
    );
  });
});
