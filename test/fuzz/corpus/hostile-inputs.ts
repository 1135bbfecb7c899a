import { nestedJson } from '../support/hostile-arbitraries';
import {
  DEAD_LETTER_HEADERS,
  HEADERS,
} from '../../../libs/reliable-messaging/src/reliable-messaging.constants';

/**
 * Known-nasty inputs, replayed before the generated cases of every fuzz run: each says why it is here. A bug
 * the fuzz found and a fix closed gets its input added here, so it is checked on every run from then on.
 */

/**
 * Bodies for the decoder and the JSON parsers. `finding` names an open finding the body fails on today; the
 * general properties leave it out and the property stating the fix replays it.
 */
export const HOSTILE_BODIES: ReadonlyArray<{ why: string; body: Buffer; finding?: string }> = [
  { why: 'empty body', body: Buffer.alloc(0) },
  { why: 'a byte order mark alone', body: Buffer.from([0xef, 0xbb, 0xbf]) },
  { why: 'a BOM before an object', body: Buffer.from('\uFEFF{"a":1}') },
  { why: 'overlong encoding of "/"', body: Buffer.from([0x22, 0xc0, 0xaf, 0x22]) },
  { why: 'an encoded surrogate', body: Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]) },
  { why: 'a truncated 4-byte sequence', body: Buffer.from([0x22, 0xf0, 0x9f, 0x98]) },
  { why: 'a byte above U+10FFFF', body: Buffer.from([0xf4, 0x90, 0x80, 0x80]) },
  { why: '__proto__ key', body: Buffer.from('{"__proto__":{"polluted":1}}') },
  { why: 'escaped __proto__ key', body: Buffer.from('{"\\u005f_proto__":{"polluted":1}}') },
  { why: 'constructor.prototype', body: Buffer.from('{"constructor":{"prototype":{"polluted":1}}}') },
  { why: '__proto__ in an array element', body: Buffer.from('[{"__proto__":{"polluted":1}}]') },
  {
    why: 'nested 20,000 deep in objects (issue: deep JSON)',
    body: Buffer.from(nestedJson(20_000, 'object')),
  },
  { why: 'nested 20,000 deep in arrays', body: Buffer.from(nestedJson(20_000, 'array')), finding: 'depth' },
  { why: 'nested 5,000 deep, below the cost that matters', body: Buffer.from(nestedJson(5_000, 'mixed')) },
  { why: 'nested 33 deep, one past the untrusted limit', body: Buffer.from(nestedJson(33, 'mixed')) },
  { why: 'a number beyond a double', body: Buffer.from('{"n":1e400}') },
  { why: 'an integer beyond 2^53', body: Buffer.from('{"n":9007199254740993}') },
  { why: 'a duplicate key', body: Buffer.from('{"a":1,"a":2}') },
  { why: 'an escaped NUL', body: Buffer.from('{"a":"\\u0000"}') },
  { why: 'an escaped lone surrogate', body: Buffer.from('{"a":"\\ud800"}') },
  { why: 'an unterminated string', body: Buffer.from('{"a":"') },
  { why: 'a trailing comma', body: Buffer.from('[1,]') },
  { why: 'JSON top-level null', body: Buffer.from('null') },
  {
    why: "Nest's RMQ packet with a prototype key in data",
    body: Buffer.from('{"pattern":"order.placed","data":{"__proto__":{"x":1}}}'),
  },
  {
    why: "Nest's RMQ packet with an extra key",
    body: Buffer.from('{"pattern":"order.placed","data":{},"toString":1}'),
  },
  {
    why: "Nest's RMQ packet asking for a reply",
    body: Buffer.from('{"pattern":"order.placed","data":{},"id":"1"}'),
  },
  {
    why: 'a constructor key holding an array: class-transformer throws a TypeError, which is retried',
    body: Buffer.from('{"orderId":{"constructor":[]},"totalCents":0,"lines":[]}'),
    finding: 'constructor',
  },
  {
    why: 'an array of 70,000 elements: 231 ms in class-transformer and class-validator on the consume path',
    body: Buffer.from(
      JSON.stringify({ orderId: 'o-1', totalCents: 1, lines: [], tags: new Array(70_000).fill(120) }),
    ),
    finding: 'elements',
  },
  { why: 'a long string', body: Buffer.from(JSON.stringify({ orderId: 'x'.repeat(100_000) })) },
  {
    why: 'many keys: 264 ms in class-transformer and class-validator on the consume path',
    finding: 'keys',
    body: Buffer.from(
      JSON.stringify(Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`k${i}`, i]))),
    ),
  },
];

/** AMQP properties and headers of the wrong type or shape, for the envelope reader. */
export const HOSTILE_PROPERTIES: ReadonlyArray<{ why: string; properties: Record<string, unknown> }> = [
  { why: 'no properties at all', properties: {} },
  { why: 'headers is null', properties: { type: 'order.placed', messageId: 'm', headers: null } },
  { why: 'type is a number', properties: { type: 7, messageId: 'm' } },
  { why: 'type is a Buffer', properties: { type: Buffer.from('order.placed'), messageId: 'm' } },
  { why: 'message id of 257 characters', properties: { type: 'order.placed', messageId: 'm'.repeat(257) } },
  {
    why: 'rm-attempt is a string',
    properties: { type: 'order.placed', messageId: 'm', headers: { [HEADERS.attempt]: '2' } },
  },
  {
    why: 'rm-attempt is huge',
    properties: { type: 'order.placed', messageId: 'm', headers: { [HEADERS.attempt]: 1e300 } },
  },
  {
    why: 'rm-attempt is a bigint',
    properties: { type: 'order.placed', messageId: 'm', headers: { [HEADERS.attempt]: 2n ** 70n } },
  },
  {
    why: 'rm-attempt is an object',
    properties: { type: 'order.placed', messageId: 'm', headers: { [HEADERS.attempt]: { valueOf: 2 } } },
  },
  {
    why: 'rm-occurred-at is an AMQP timestamp',
    properties: {
      type: 'order.placed',
      messageId: 'm',
      headers: { [HEADERS.occurredAt]: { '!': 'timestamp', value: 1 } },
    },
  },
  {
    why: 'rm-occurred-at is not a date',
    properties: { type: 'order.placed', messageId: 'm', headers: { [HEADERS.occurredAt]: 'yesterday' } },
  },
  { why: 'timestamp is Infinity', properties: { type: 'order.placed', messageId: 'm', timestamp: Infinity } },
  { why: 'timestamp beyond a Date', properties: { type: 'order.placed', messageId: 'm', timestamp: 1e300 } },
  {
    why: 'schema version 1e400',
    properties: { type: 'order.placed', messageId: 'm', headers: { [HEADERS.schemaVersion]: '1e400' } },
  },
  {
    why: 'schema version of 257 nines',
    properties: {
      type: 'order.placed',
      messageId: 'm',
      headers: { [HEADERS.schemaVersion]: '9'.repeat(257) },
    },
  },
  {
    why: 'content type is an array',
    properties: { type: 'order.placed', messageId: 'm', contentType: ['application/json'] },
  },
  {
    why: 'a __proto__ header',
    properties: {
      type: 'order.placed',
      messageId: 'm',
      headers: JSON.parse('{"__proto__":{"polluted":1}}') as unknown,
    },
  },
];

const STORED_ID = '0190a5f2-3c4d-7e5f-8a6b-9c0d1e2f3a4b';

/** Claim-check headers a forger writes. */
export const HOSTILE_CLAIM_CHECK_HEADERS: ReadonlyArray<{ why: string; headers: Record<string, unknown> }> = [
  { why: 'reference is a number', headers: { [HEADERS.claimCheck]: 42 } },
  { why: 'reference is empty', headers: { [HEADERS.claimCheck]: '' } },
  { why: 'reference to another store', headers: { [HEADERS.claimCheck]: `s3://bucket/${STORED_ID}` } },
  { why: 'a path in the reference', headers: { [HEADERS.claimCheck]: `postgres:../${STORED_ID}` } },
  {
    why: 'bytes 1e400 (Infinity)',
    headers: {
      [HEADERS.claimCheck]: `postgres:${STORED_ID}`,
      [HEADERS.claimCheckBytes]: '1e400',
      [HEADERS.claimCheckSha256]: 'a'.repeat(64),
    },
  },
  {
    why: 'bytes -1',
    headers: {
      [HEADERS.claimCheck]: `postgres:${STORED_ID}`,
      [HEADERS.claimCheckBytes]: -1,
      [HEADERS.claimCheckSha256]: 'a'.repeat(64),
    },
  },
  {
    why: 'bytes is an array',
    headers: {
      [HEADERS.claimCheck]: `postgres:${STORED_ID}`,
      [HEADERS.claimCheckBytes]: [17],
      [HEADERS.claimCheckSha256]: 'a'.repeat(64),
    },
  },
  {
    why: 'bytes is a bigint',
    headers: {
      [HEADERS.claimCheck]: `postgres:${STORED_ID}`,
      [HEADERS.claimCheckBytes]: 17n,
      [HEADERS.claimCheckSha256]: 'a'.repeat(64),
    },
  },
  {
    why: 'bytes above the limit',
    headers: {
      [HEADERS.claimCheck]: `postgres:${STORED_ID}`,
      [HEADERS.claimCheckBytes]: 200 * 1024 * 1024,
      [HEADERS.claimCheckSha256]: 'a'.repeat(64),
    },
  },
  {
    why: 'upper-case hash',
    headers: {
      [HEADERS.claimCheck]: `postgres:${STORED_ID}`,
      [HEADERS.claimCheckBytes]: 17,
      [HEADERS.claimCheckSha256]: 'A'.repeat(64),
    },
  },
  {
    why: 'field __proto__',
    headers: {
      [HEADERS.claimCheck]: `postgres:${STORED_ID}`,
      [HEADERS.claimCheckBytes]: 17,
      [HEADERS.claimCheckSha256]: 'a'.repeat(64),
      [HEADERS.claimCheckField]: '__proto__',
    },
  },
  {
    why: 'reference to a missing body',
    headers: {
      [HEADERS.claimCheck]: 'postgres:0190a5f2-3c4d-7e5f-8a6b-000000000000',
      [HEADERS.claimCheckBytes]: 17,
      [HEADERS.claimCheckSha256]: 'a'.repeat(64),
    },
  },
];

/** Dead-letter headers a forger writes, or the broker writes in a shape the module did not expect. */
export const HOSTILE_DEAD_LETTER_HEADERS: ReadonlyArray<{
  why: string;
  headers: Record<string, unknown>;
  finding?: string;
}> = [
  {
    why: 'an AMQP timestamp whose value is a table with string valueOf and toString: Number() throws a TypeError',
    headers: {
      [DEAD_LETTER_HEADERS.lastFailureAt]: { '!': 'timestamp', value: { valueOf: '1', toString: '1' } },
    },
    finding: 'header-date',
  },
  {
    why: 'the same in x-death time, as a broker-made dead letter a forger published straight to the DLQ',
    headers: {
      'x-death': [{ queue: 'q', time: { '!': 'timestamp', value: { valueOf: '1', toString: '1' } } }],
    },
    finding: 'header-date',
  },
  { why: 'x-death is not an array', headers: { 'x-death': 'queue' } },
  { why: 'x-death of nulls', headers: { 'x-death': [null, 1] } },
  {
    why: 'x-death time as an AMQP timestamp of text',
    headers: { 'x-death': [{ queue: 'q', time: { '!': 'timestamp', value: 'soon' } }] },
  },
  {
    why: 'x-death time beyond a Date',
    headers: { 'x-death': [{ queue: 'q', time: { '!': 'timestamp', value: 1e300 } }] },
  },
  { why: 'routing keys of numbers', headers: { 'x-death': [{ queue: 'q', 'routing-keys': [1, 2] }] } },
  { why: 'a count of 1e400', headers: { [DEAD_LETTER_HEADERS.count]: '1e400' } },
  { why: 'a count of -1', headers: { [DEAD_LETTER_HEADERS.count]: -1 } },
  { why: 'a count as a bigint', headers: { [DEAD_LETTER_HEADERS.count]: 3n } },
  { why: 'attempts as an object', headers: { [DEAD_LETTER_HEADERS.attempts]: { valueOf: 3 } } },
  { why: 'a date that is not one', headers: { [DEAD_LETTER_HEADERS.lastFailureAt]: 'yesterday' } },
  {
    why: 'a date as a Buffer',
    headers: { [DEAD_LETTER_HEADERS.firstFailureAt]: Buffer.from('2026-01-01T00:00:00Z') },
  },
  {
    why: 'a date beyond a Date',
    headers: { [DEAD_LETTER_HEADERS.replayedAt]: '+275760-09-13T00:00:00.001Z' },
  },
  { why: 'a reason of 70,000 characters', headers: { [DEAD_LETTER_HEADERS.reason]: 'r'.repeat(70_000) } },
  {
    why: 'a __proto__ header',
    headers: JSON.parse('{"__proto__":{"polluted":1}}') as Record<string, unknown>,
  },
];

/** Idempotency-Key header lines as Node gives them (`headersDistinct`). */
export const HOSTILE_IDEMPOTENCY_KEYS: ReadonlyArray<{ why: string; values: string[] | undefined }> = [
  { why: 'no header', values: undefined },
  { why: 'an empty list', values: [] },
  { why: 'sent twice', values: ['a', 'b'] },
  { why: 'empty quotes', values: ['""'] },
  { why: 'a lone quote', values: ['"'] },
  { why: 'an escape at the end', values: ['"abc\\"'] },
  { why: 'an unknown escape', values: ['"a\\nb"'] },
  { why: 'a quote inside', values: ['"a"b"'] },
  { why: 'non-ASCII', values: ['clé'] },
  { why: 'a NUL', values: ['a\u0000b'] },
  { why: '256 characters', values: ['k'.repeat(256)] },
  { why: '70,000 characters', values: ['k'.repeat(70_000)] },
  { why: 'a key named __proto__', values: ['__proto__'] },
];

/** Filter and option fields of the admin API, the console's forms and the command line. */
export const HOSTILE_FILTERS: ReadonlyArray<{ why: string; input: Record<string, unknown> }> = [
  { why: 'since after until', input: { since: '1h', until: '2h' } },
  { why: 'an age of 25 digits', input: { since: '9999999999999999999999999w' } },
  { why: 'a date past the range of Date', input: { until: '+275760-09-13T00:00:00.001Z' } },
  { why: 'a date without digits in front', input: { since: 'May 1 2026' } },
  { why: 'an impossible day', input: { since: '2026-02-30T25:61:61Z' } },
  { why: 'since as a number', input: { since: 1_700_000_000 } },
  { why: 'message ids as an object', input: { messageIds: { 0: 'a', length: 1 } } },
  { why: 'message ids with an empty one', input: { messageIds: ['a', ''] } },
  { why: '10,001 message ids', input: { messageIds: Array.from({ length: 10_001 }, (_, i) => `m-${i}`) } },
  { why: 'ids of a number', input: { ids: [1] } },
  { why: 'limit 0', input: { limit: 0 } },
  { why: 'limit 1e400', input: { limit: '1e400' } },
  { why: 'limit 1.5', input: { limit: '1.5' } },
  { why: 'limit as a list', input: { limit: ['5'] } },
  {
    why: 'limit as an object whose toString is not a function: a TypeError, a 500 (fixed)',
    input: { limit: { toString: '' } },
  },
  { why: 'dryRun as text', input: { dryRun: 'true' } },
  { why: 'a note of 1001 characters', input: { note: 'n'.repeat(1001) } },
  { why: 'text of 257 characters', input: { text: 't'.repeat(257) } },
  { why: 'a queue as a list', input: { queue: ['orders', 'billing'] } },
  {
    why: 'a __proto__ field',
    input: JSON.parse('{"__proto__":{"polluted":1},"queue":"orders"}') as Record<string, unknown>,
  },
  { why: 'all given twice', input: { all: ['1', '1'], id: ['', 'm-1'] } },
];

/** Bodies and `--set` edits for the command line's edit. */
export const HOSTILE_EDITS: ReadonlyArray<{ body: Buffer; edits: string[] }> = [
  { body: Buffer.from('{"a":1}'), edits: ['__proto__.polluted=1'] },
  { body: Buffer.from('{"a":1}'), edits: ['constructor.prototype.polluted=1'] },
  { body: Buffer.from('{"a":1}'), edits: ['a.__proto__=1'] },
  { body: Buffer.from('{"a":1}'), edits: ['toString.x=1', 'hasOwnProperty=2'] },
  { body: Buffer.from('{"__proto__":{"x":1}}'), edits: ['x=1'] },
  { body: Buffer.from('{"a":1}'), edits: ['a={"__proto__":{"polluted":1}}'] },
  { body: Buffer.from('{"a":1}'), edits: ['=1', 'a', '.a=1', 'a..b=1'] },
  { body: Buffer.from('[1]'), edits: ['a=1'] },
  { body: Buffer.from([0xff, 0xfe]), edits: ['a=1'] },
  // A RangeError from JSON.stringify before the depth checks (fixed): a deep path, a deep body, a deep value.
  { body: Buffer.from('{"a":1}'), edits: [`${Array.from({ length: 5_000 }, () => 'a').join('.')}=1`] },
  { body: Buffer.from(nestedJson(5_000, 'object')), edits: ['a=1'] },
  { body: Buffer.from('{"a":1}'), edits: [`a=${nestedJson(5_000, 'array')}`] },
];
