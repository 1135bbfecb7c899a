import type { IncomingMessage } from 'node:http';
import {
  BadRequestException,
  Injectable,
  PayloadTooLargeException,
  UnsupportedMediaTypeException,
  type NestMiddleware,
} from '@nestjs/common';
import { parseUntrustedJson, UntrustedJsonError, type JsonLimits } from 'nestjs-reliable-messaging/safe-json';

/**
 * The largest body taken, in bytes. The largest valid order (100 lines of 64-character SKUs and a note of 32768
 * code points, every character written as a 12-byte `\ud83d\ude00` escape pair) is about 480 kB.
 */
export const JSON_BODY_LIMIT_BYTES = 512 * 1024;

/**
 * Limits on a body's shape, checked before class-transformer builds the DTO. The deepest valid body has 3 levels
 * (order, items, line), its longest array 100 lines, its largest object 3 keys and its longest key 10 characters;
 * the limits leave room for the API to grow and keep class-transformer's recursion, the validation errors
 * listed in a 400 and any key quoted in them small.
 */
export const JSON_BODY_LIMITS: Partial<JsonLimits> = {
  maxDepth: 8,
  maxArrayLength: 100,
  maxObjectKeys: 16,
  maxKeyLength: 64,
};

/** Request methods whose requests must carry a JSON body. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Reads and parses JSON request bodies in place of Nest's body parser (create the app with `bodyParser: false`):
 * the raw bytes must be well-formed UTF-8, and the JSON within {@link JSON_BODY_LIMITS}, with no forbidden or
 * duplicate key, NUL character or lone surrogate. Each refusal is a 4xx naming the field and why: 400, 413 over
 * {@link JSON_BODY_LIMIT_BYTES}, 415 for another media type, charset or content encoding.
 */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  async use(
    request: IncomingMessage & { body?: unknown },
    _response: unknown,
    next: () => void,
  ): Promise<void> {
    if (!BODY_METHODS.has(request.method ?? '') && !carriesBody(request)) return next();
    if (request.readableEnded) {
      // NOTE: Nest's own body parser reads the stream first unless the app is created with `bodyParser: false`;
      // what it parsed was never checked, so refuse to go on rather than pass it along.
      throw new Error(
        'JsonBodyMiddleware found the body already read: create the app with { bodyParser: false }',
      );
    }
    const mediaTypeProblem = jsonMediaTypeProblem(request);
    if (mediaTypeProblem && carriesBody(request)) throw new UnsupportedMediaTypeException([mediaTypeProblem]);
    const bytes = await readBody(request, JSON_BODY_LIMIT_BYTES);
    if (bytes.length === 0) throw new BadRequestException(['body is empty; expected a JSON object']);
    let body: unknown;
    try {
      body = parseUntrustedJson(bytes, JSON_BODY_LIMITS);
    } catch (error) {
      if (error instanceof UntrustedJsonError) throw new BadRequestException([error.message]);
      throw error;
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new BadRequestException([`body must be a JSON object; got ${describe(body)}`]);
    }
    request.body = body;
    next();
  }
}

/** Whether the request says it has a body (`Content-Length` above 0, or a `Transfer-Encoding`). */
function carriesBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Why the request's media type is not JSON in UTF-8, or undefined when it is. */
export function jsonMediaTypeProblem(request: IncomingMessage): string | undefined {
  const encoding = request.headers['content-encoding'];
  if (encoding && encoding.toLowerCase() !== 'identity') {
    return `Content-Encoding '${excerpt(encoding)}' is not supported; send the body uncompressed`;
  }
  const header = request.headers['content-type'];
  if (!header) return 'Content-Type must be application/json; got none';
  const [type, ...parameters] = header.split(';').map((part) => part.trim().toLowerCase());
  if (type !== 'application/json' && !/^application\/[\w.-]+\+json$/.test(type)) {
    return `Content-Type must be application/json; got '${excerpt(header)}'`;
  }
  const charset = parameters.find((parameter) => parameter.startsWith('charset='))?.slice('charset='.length);
  if (charset !== undefined && !['utf-8', 'utf8'].includes(charset.replaceAll('"', ''))) {
    return `the charset of a JSON body must be utf-8; got '${excerpt(charset)}'`;
  }
  return undefined;
}

/**
 * The request's body, or a 413 once it passes `limit` bytes. A body too large is still read to its end and
 * dropped, so the 413 reaches a client that is still sending instead of a reset connection.
 */
function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = Number(request.headers['content-length']) > limit;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      tooLarge ||= size > limit;
      if (!tooLarge) chunks.push(chunk);
    });
    request.on('end', () => {
      if (tooLarge) {
        reject(new PayloadTooLargeException([`body must be at most ${limit} bytes`]));
      } else {
        resolve(Buffer.concat(chunks, size));
      }
    });
    request.on('error', reject);
    // After 'end' this changes nothing; before it, the client went away mid-body.
    request.on('close', () => reject(new Error('the client closed the connection before the body ended')));
  });
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

function excerpt(text: string, max = 64): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
