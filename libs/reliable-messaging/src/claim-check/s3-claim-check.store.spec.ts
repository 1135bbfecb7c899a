import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { S3Client } from '@aws-sdk/client-s3';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { S3ClaimCheckStore } from './s3-claim-check.store';

const MIB = 1024 * 1024;
const LOCATION = '1893456000-01890000-0000-7000-8000-000000000001';

/**
 * Just enough of S3's GetObject for the store's read: every GET answers with the body `answer` writes. It counts
 * the bytes it managed to send, and sees when the client hung up.
 */
let answer: (response: ServerResponse) => void;
let sent = 0;
let hungUp: Promise<void>;
let server: Server;
let store: S3ClaimCheckStore;

/** Sends `total` bytes in 64 KiB chunks as the client takes them, stopping when it hangs up. */
function stream(response: ServerResponse, total: number): void {
  const chunk = Buffer.alloc(64 * 1024, 120);
  const more = (): void => {
    while (sent < total && !response.destroyed) {
      const part = chunk.subarray(0, Math.min(chunk.length, total - sent));
      sent += part.length;
      if (!response.write(part)) {
        response.once('drain', more);
        return;
      }
    }
    if (sent >= total) response.end();
  };
  more();
}

beforeAll(async () => {
  server = createServer((request, response) => {
    hungUp = new Promise((resolve) => response.once('close', () => resolve()));
    request.resume();
    answer(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  store = new S3ClaimCheckStore({
    client: new S3Client({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: 1,
    }),
    bucket: 'rm-claim-check',
  });
});

beforeEach(() => {
  sent = 0;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

async function refusal(promise: Promise<unknown>): Promise<InvalidMessageError> {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(InvalidMessageError);
  return error as InvalidMessageError;
}

describe('S3ClaimCheckStore.get', () => {
  it('reads an object of the declared size', async () => {
    answer = (response) => {
      response.writeHead(200, { 'Content-Length': '5', 'Content-Type': 'application/octet-stream' });
      response.end('hello');
    };
    expect((await store.get(LOCATION, 5))?.toString()).toBe('hello');
  });

  it('refuses a 200 MiB object declared as 10 bytes from its Content-Length, hanging up before its body', async () => {
    answer = (response) => {
      response.writeHead(200, {
        'Content-Length': String(200 * MIB),
        'Content-Type': 'application/octet-stream',
      });
      stream(response, 200 * MIB);
    };

    const error = await refusal(store.get(LOCATION, 10));
    await hungUp;

    expect(error.reason).toBe('claim-check-corrupt');
    expect(error.message).toMatch(
      /holds 209715200 bytes where the message declares 10; the body was not read/,
    );
    expect(sent).toBeLessThan(16 * MIB);
  });

  it('gives up an endless body sent without a length at the first byte beyond the declared size', async () => {
    answer = (response) => {
      response.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      stream(response, 200 * MIB);
    };

    const error = await refusal(store.get(LOCATION, 100 * 1024));
    await hungUp;

    expect(error.reason).toBe('claim-check-corrupt');
    expect(error.message).toMatch(/holds more than 102400 bytes/);
    expect(sent).toBeLessThan(16 * MIB);
  });
});
