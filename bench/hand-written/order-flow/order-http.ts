import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { readPlaceOrder, type PlaceOrder, type PlacedOrderView } from './place-order';

/** The largest body taken, as the app's: room for the largest valid order. */
const BODY_LIMIT_BYTES = 512 * 1024;

/** A request that ends in a 4xx: its status and what was wrong. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly problems: string[],
  ) {
    super(problems.join('; '));
  }
}

/**
 * `POST /orders` and nothing else: a JSON body of at most 512 kB, checked by the app's rules, answered 201 with
 * the new order as the app answers it; 400 naming each problem, 404, 405, 413 or 415 otherwise, and 500 when the
 * order could not be stored.
 */
export function orderRequests(place: (order: PlaceOrder) => Promise<PlacedOrderView>): RequestListener {
  return (request, response) => {
    handle(request, response, place).catch((error: unknown) => {
      if (error instanceof Refusal)
        return answer(response, error.status, { statusCode: error.status, message: error.problems });
      console.error(`POST /orders failed: ${String(error)}`);
      answer(response, 500, { statusCode: 500, message: 'Internal server error' });
    });
  };
}

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  place: (order: PlaceOrder) => Promise<PlacedOrderView>,
): Promise<void> {
  if (request.url?.split('?')[0] !== '/orders') throw new Refusal(404, ['not found']);
  if (request.method !== 'POST') throw new Refusal(405, ['only POST']);
  const mediaType = request.headers['content-type']?.split(';')[0].trim().toLowerCase();
  if (mediaType !== 'application/json') throw new Refusal(415, ['the body must be application/json']);
  const body = await readJson(request);
  const read = readPlaceOrder(body);
  if ('problems' in read) throw new Refusal(400, read.problems);
  answer(response, 201, await place(read.order));
}

/** The body parsed as JSON; refused over the limit (before reading the rest) or when it is not JSON. */
async function readJson(request: IncomingMessage): Promise<unknown> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > BODY_LIMIT_BYTES) throw new Refusal(413, [`the body is over ${BODY_LIMIT_BYTES} bytes`]);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > BODY_LIMIT_BYTES) throw new Refusal(413, [`the body is over ${BODY_LIMIT_BYTES} bytes`]);
    chunks.push(chunk);
  }
  try {
    // NOTE: fatal decoding refuses invalid UTF-8, which Buffer#toString would turn into U+FFFD silently.
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks)));
  } catch {
    throw new Refusal(400, ['the body is not JSON in UTF-8']);
  }
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
  });
  response.end(json);
}
