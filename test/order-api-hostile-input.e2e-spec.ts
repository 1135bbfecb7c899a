import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';
import { OrderServiceApp } from './support/order-service-app';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';
import { waitFor } from './support/wait-for';

const ITEM = { sku: 'BOOK-1', quantity: 2, unitPrice: 19.99 };
const ORDER = { customerId: 'customer-1', items: [ITEM] };

/** A hostile request: its body (JSON text, or raw bytes) and, when not JSON's, its headers. */
interface HostileRequest {
  body: string | Buffer;
  headers?: Record<string, string>;
}

/** The order as JSON text with `patch` applied, then `edit` run on the text for what JSON.stringify cannot write. */
function order(patch: Record<string, unknown> = {}, edit: (text: string) => string = (text) => text): string {
  return edit(JSON.stringify({ ...ORDER, ...patch }));
}

/** The order with its one item patched. */
function item(patch: Record<string, unknown>, edit?: (text: string) => string): string {
  return order({ items: [{ ...ITEM, ...patch }] }, edit);
}

/** The order's text with `marker` (a string value in it) replaced by raw bytes. */
function withBytes(text: string, marker: string, bytes: number[]): Buffer {
  const [before, after] = text.split(marker);
  return Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(after)]);
}

const HEART = '\u2764\ufe0f'; // ❤️: a heart and a variation selector, 2 code points that @MaxLength counts as 1
const EMOJI = '\u{1f600}'; // 😀: 1 code point, 2 UTF-16 code units, 4 bytes

const HOSTILE: Array<[string, HostileRequest, number, RegExp]> = [
  // NUL, which PostgreSQL cannot store
  ['NUL in customerId', { body: order({ customerId: 'c\u0000' }) }, 400, /^customerId must not contain NUL/],
  ['NUL in a sku', { body: item({ sku: 'A\u0000B' }) }, 400, /^items\.0\.sku must not contain NUL/],
  ['NUL in a key', { body: order({ 'x\u0000': 1 }) }, 400, /^body has a key that must not contain NUL/],
  // Lone surrogates, which no UTF-8 encoder can write faithfully
  [
    'a lone high surrogate in customerId',
    { body: order({}, (text) => text.replace('customer-1', 'c\\ud800')) },
    400,
    /^customerId must be well-formed Unicode, without a lone surrogate \(U\+D800\)/,
  ],
  [
    'a lone low surrogate in a sku',
    { body: item({}, (text) => text.replace('BOOK-1', '\\udfffB')) },
    400,
    /^items\.0\.sku must be well-formed Unicode/,
  ],
  [
    'a surrogate pair in the wrong order',
    { body: order({}, (text) => text.replace('customer-1', '\\ude00\\ud83d')) },
    400,
    /^customerId must be well-formed Unicode/,
  ],
  // Invalid UTF-8, which a lenient decoder would replace with U+FFFD
  [
    'a 0xFF byte in customerId',
    { body: withBytes(order(), 'customer-1', [0x63, 0xff]) },
    400,
    /not valid UTF-8/,
  ],
  ['an overlong "/" in a sku', { body: withBytes(item({}), 'BOOK-1', [0xc0, 0xaf]) }, 400, /not valid UTF-8/],
  [
    'a UTF-8-encoded surrogate',
    { body: withBytes(order(), 'customer-1', [0xed, 0xa0, 0x80]) },
    400,
    /^body is not valid UTF-8: ill-formed byte sequence at byte 15$/,
  ],
  [
    'a multi-byte sequence cut short',
    { body: withBytes(order(), 'customer-1', [0xe2, 0x82]) },
    400,
    /not valid UTF-8/,
  ],
  // Lengths, counted in code points as PostgreSQL's varchar counts them
  [
    '101 ASCII characters in customerId',
    { body: order({ customerId: 'c'.repeat(101) }) },
    400,
    /^customerId must be at most 100 characters long$/,
  ],
  [
    '51 hearts with variation selectors in customerId: 102 code points, which @MaxLength counts as 51',
    { body: order({ customerId: HEART.repeat(51) }) },
    400,
    /^customerId must be at most 100 characters long$/,
  ],
  [
    '101 emoji in customerId',
    { body: order({ customerId: EMOJI.repeat(101) }) },
    400,
    /^customerId must be at most 100/,
  ],
  [
    '65 characters in a sku',
    { body: item({ sku: 'S'.repeat(65) }) },
    400,
    /^items\.0\.sku must be at most 64 characters long$/,
  ],
  [
    '33 hearts in a sku: 66 code points',
    { body: item({ sku: HEART.repeat(33) }) },
    400,
    /^items\.0\.sku must be at most 64/,
  ],
  ['an empty customerId', { body: order({ customerId: '' }) }, 400, /^customerId should not be empty$/],
  [
    'a 60 kB customerId, not echoed back',
    { body: order({ customerId: 'x'.repeat(60_000) }) },
    400,
    /^customerId must be at most 100/,
  ],
  [
    'a body over 512 kB',
    { body: order({ customerId: 'x'.repeat(600_000) }) },
    413,
    /^body must be at most 524288 bytes$/,
  ],
  // Depth and size, limited before class-transformer recurses into them
  [
    'an array depth bomb in customerId',
    { body: order({}, (text) => text.replace('"customer-1"', `${'['.repeat(20_000)}${']'.repeat(20_000)}`)) },
    400,
    /^customerId\.0\.0\.0\.0\.0\.0\.0 nests deeper than 8 levels$/,
  ],
  [
    'an object depth bomb in an unknown field',
    { body: order({}, (text) => text.replace('{', `{"x":${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)},`)) },
    400,
    /^x\.a\.a\.a\.a\.a\.a\.a nests deeper than 8 levels$/,
  ],
  [
    'a depth bomb as the whole body',
    { body: `${'['.repeat(30_000)}${']'.repeat(30_000)}` },
    400,
    /nests deeper than 8 levels$/,
  ],
  [
    '101 items',
    { body: order({ items: Array.from({ length: 101 }, () => ITEM) }) },
    400,
    /^items must have at most 100 elements$/,
  ],
  [
    '20 000 numbers in an unknown field',
    { body: order({ x: Array.from({ length: 20_000 }, () => 0) }) },
    400,
    /^x must have at most 100 elements$/,
  ],
  ['no items', { body: order({ items: [] }) }, 400, /^items must contain at least 1 elements$/],
  // Wrong types
  ['customerId as a number', { body: order({ customerId: 42 }) }, 400, /^customerId must be a string$/m],
  ['items as an object', { body: order({ items: { 0: ITEM } }) }, 400, /^items must be an array$/m],
  ['items as a string', { body: order({ items: 'BOOK-1' }) }, 400, /^items must be an array$/m],
  ['a null item', { body: order({ items: [null] }) }, 400, /^items\..*must be either object or array$/m],
  [
    'an item that is a string',
    { body: order({ items: ['BOOK-1'] }) },
    400,
    /^items\..*must be either object or array$/m,
  ],
  [
    'a boolean quantity',
    { body: item({ quantity: true }) },
    400,
    /^items\.0\.quantity must be an integer number$/m,
  ],
  ['a sku as an array', { body: item({ sku: ['A'] }) }, 400, /^items\.0\.sku must be a string$/m],
  // Numbers
  [
    'a negative quantity',
    { body: item({ quantity: -1 }) },
    400,
    /^items\.0\.quantity must not be less than 1$/m,
  ],
  [
    'a fractional quantity',
    { body: item({ quantity: 1.5 }) },
    400,
    /^items\.0\.quantity must be an integer number$/m,
  ],
  [
    'a quantity of 1e400',
    { body: item({}, (text) => text.replace('"quantity":2', '"quantity":1e400')) },
    400,
    /^items\.0\.quantity must be a finite number$/,
  ],
  [
    'a quantity of 10001',
    { body: item({ quantity: 10_001 }) },
    400,
    /^items\.0\.quantity must not be greater than 10000$/m,
  ],
  [
    'a 20-digit quantity',
    { body: item({}, (text) => text.replace('"quantity":2', '"quantity":99999999999999999999')) },
    400,
    /^items\.0\.quantity must be an integer from -9007199254740991 to 9007199254740991 \(send larger ones as strings\)$/,
  ],
  [
    'a quantity as a string',
    { body: item({ quantity: '2' }) },
    400,
    /^items\.0\.quantity must be an integer number$/m,
  ],
  [
    'a negative price',
    { body: item({ unitPrice: -0.01 }) },
    400,
    /^items\.0\.unitPrice must be a number from 0 to 1000000 with at most 2 decimal places$/,
  ],
  [
    'a price in fractions of a cent',
    { body: item({ unitPrice: 0.001 }) },
    400,
    /^items\.0\.unitPrice must be a number from 0/,
  ],
  [
    'a price of 1e309',
    { body: item({}, (text) => text.replace('"unitPrice":19.99', '"unitPrice":1e309')) },
    400,
    /^items\.0\.unitPrice must be a finite number$/,
  ],
  [
    'a price as a string',
    { body: item({ unitPrice: '19.99' }) },
    400,
    /^items\.0\.unitPrice must be a number from 0/,
  ],
  // Keys that reach or shadow a prototype, which Nest and class-transformer used to drop without a word
  [
    'a top-level __proto__',
    { body: order({}, (text) => text.replace('{', '{"__proto__":{"admin":true},')) },
    400,
    /^__proto__ is a forbidden key$/,
  ],
  [
    'a __proto__ in an item',
    { body: item({}, (text) => text.replace('{"sku"', '{"__proto__":{},"sku"')) },
    400,
    /^items\.0\.__proto__ is a forbidden key$/,
  ],
  [
    'an escaped __proto__',
    { body: order({}, (text) => text.replace('{', '{"\\u005f_proto__":{},')) },
    400,
    /^__proto__ is a forbidden key$/,
  ],
  [
    'a top-level constructor',
    { body: order({ constructor: { name: 'x' } }) },
    400,
    /^constructor is a forbidden key$/,
  ],
  [
    'a constructor.prototype in an item',
    { body: item({ constructor: { prototype: { admin: true } } }) },
    400,
    /^items\.0\.constructor is a forbidden key$/,
  ],
  ['a top-level prototype', { body: order({ prototype: {} }) }, 400, /^prototype is a forbidden key$/],
  [
    'a prototype in an item',
    { body: item({ prototype: 1 }) },
    400,
    /^items\.0\.prototype is a forbidden key$/,
  ],
  ['a toString in an item', { body: item({ toString: 1 }) }, 400, /^items\.0\.toString is a forbidden key$/],
  // Unknown and duplicate fields
  [
    'an unknown top-level field',
    { body: order({ discount: 10 }) },
    400,
    /^property discount should not exist$/m,
  ],
  [
    'an unknown field in an item',
    { body: item({ colour: 'red' }) },
    400,
    /^items\.0\.property colour should not exist$/m,
  ],
  ['an unknown object field', { body: order({ meta: { a: 1 } }) }, 400, /^property meta should not exist$/m],
  [
    '17 top-level keys',
    { body: order(Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${i}`, i]))) },
    400,
    /^body must have at most 16 keys$/,
  ],
  [
    'a 65-character key',
    { body: order({ ['k'.repeat(65)]: 1 }) },
    400,
    /^body has a key longer than 64 characters$/,
  ],
  [
    'customerId twice',
    { body: order({}, (text) => text.replace('{', '{"customerId":"someone-else",')) },
    400,
    /^customerId appears more than once$/,
  ],
  [
    'quantity twice in an item',
    { body: item({}, (text) => text.replace('"quantity":2', '"quantity":2,"quantity":9999')) },
    400,
    /^items\.0\.quantity appears more than once$/,
  ],
  // Bodies that are not a JSON object
  ['an empty body', { body: '' }, 400, /^body is empty; expected a JSON object$/],
  ['JSON null', { body: 'null' }, 400, /^body must be a JSON object; got null$/],
  ['an array', { body: `[${order()}]` }, 400, /^body must be a JSON object; got an array$/],
  ['a string', { body: '"order"' }, 400, /^body must be a JSON object; got a string$/],
  ['a number', { body: '42' }, 400, /^body must be a JSON object; got a number$/],
  ['truncated JSON', { body: order().slice(0, 20) }, 400, /^body is not valid JSON: /],
  ['trailing garbage', { body: `${order()} and more` }, 400, /^body is not valid JSON: /],
  ['NaN', { body: item({}, (text) => text.replace('19.99', 'NaN')) }, 400, /^body is not valid JSON: /],
  ['single quotes', { body: "{'customerId':'c'}" }, 400, /^body is not valid JSON: /],
  // Media types
  [
    'text/plain',
    { body: order(), headers: { 'content-type': 'text/plain' } },
    415,
    /^Content-Type must be application\/json; got 'text\/plain'$/,
  ],
  [
    'a form',
    { body: 'customerId=c', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    415,
    /^Content-Type must be application\/json/,
  ],
  [
    'a latin1 charset',
    { body: order(), headers: { 'content-type': 'application/json; charset=latin1' } },
    415,
    /^the charset of a JSON body must be utf-8; got 'latin1'$/,
  ],
  [
    'a UTF-16 body',
    {
      body: Buffer.from(order(), 'utf16le'),
      headers: { 'content-type': 'application/json; charset=utf-16le' },
    },
    415,
    /charset of a JSON body must be utf-8/,
  ],
  [
    'a gzip content encoding',
    { body: order(), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } },
    415,
    /^Content-Encoding 'gzip' is not supported/,
  ],
];

/** Bodies at the limits, each to be accepted and stored exactly as sent. */
const AT_THE_LIMIT: Array<[string, { customerId: string; sku: string }]> = [
  [
    '100 ASCII characters in customerId and 64 in the sku',
    { customerId: 'c'.repeat(100), sku: 'S'.repeat(64) },
  ],
  [
    '100 emoji in customerId (400 bytes) and 64 in the sku',
    { customerId: EMOJI.repeat(100), sku: EMOJI.repeat(64) },
  ],
  [
    '50 hearts with variation selectors (100 code points) and 32 in the sku',
    { customerId: HEART.repeat(50), sku: HEART.repeat(32) },
  ],
  ['text from several scripts', { customerId: 'Zoë Ørsted-Łukasz 山田 دینا', sku: 'ÇA-€-✓' }],
];

describe('order API hostile input: each hostile body is refused with its 4xx, naming the field and why', () => {
  let database: TestDatabase;
  let broker: TestBroker;
  let app: ChildApp;
  let baseUrl: string;
  let storedBefore: number;

  async function post(request: HostileRequest): Promise<{ status: number; text: string }> {
    const response = await fetch(`${baseUrl}/orders`, {
      method: 'POST',
      headers: request.headers ?? { 'content-type': 'application/json' },
      body: request.body,
    });
    return { status: response.status, text: await response.text() };
  }

  async function get(path: string): Promise<Record<string, unknown>> {
    return (await (await fetch(`${baseUrl}${path}`)).json()) as Record<string, unknown>;
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    broker = await TestBroker.connect();
    ({ process: app, baseUrl } = await OrderServiceApp.start(database, broker));
    storedBefore = (await get('/orders/stats')).orders as number;
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await broker?.deleteByPrefix();
    await broker?.close();
    await database?.drop();
  });

  it('has a table of at least 40 hostile bodies', () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(40);
  });

  it.each(HOSTILE)('refuses %s', async (_case, request, status, problem) => {
    const response = await post(request);

    expect(response.status).toBe(status);
    const body = JSON.parse(response.text) as { message: string[]; statusCode: number };
    expect(body.statusCode).toBe(status);
    expect(body.message.join('\n')).toMatch(problem);
    // The answer never echoes a large input back.
    expect(response.text.length).toBeLessThan(3_000);
  });

  it('stored none of the refused orders, and logged no server error', async () => {
    expect((await get('/orders/stats')).orders).toBe(storedBefore);
    expect(app.lines.filter((line) => /ERROR|Internal server error/.test(line))).toEqual([]);
  });

  it.each(AT_THE_LIMIT)('accepts %s, and stores it exactly as sent', async (_case, fields) => {
    const response = await post({
      body: order({ customerId: fields.customerId, items: [{ ...ITEM, sku: fields.sku }] }),
    });

    expect(response.status).toBe(201);
    const { id } = JSON.parse(response.text) as { id: string };
    const stored = await get(`/orders/${id}`);
    expect(stored.customerId).toBe(fields.customerId);
    expect((stored.items as Array<{ sku: string }>)[0].sku).toBe(fields.sku);
  });

  it('accepts 100 items and a charset of utf-8', async () => {
    const response = await post({
      body: order({ items: Array.from({ length: 100 }, (_, line) => ({ ...ITEM, sku: `SKU-${line}` })) }),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });

    expect(response.status).toBe(201);
  });

  it('does not mount the admin API without ADMIN_TOKEN: 404', async () => {
    for (const path of ['/admin/dead-letters/queues', '/admin/dead-letters/outbox/rows']) {
      expect((await fetch(`${baseUrl}${path}`)).status).toBe(404);
    }
  });

  it('still serves afterwards: a valid order is placed and gets paid', async () => {
    const response = await post({ body: order() });

    expect(response.status).toBe(201);
    const { id } = JSON.parse(response.text) as { id: string };
    let seen: Record<string, unknown> = {};
    await waitFor(
      () => `order ${id} paid (last seen ${JSON.stringify(seen)})`,
      async () => {
        seen = await get(`/orders/${id}`);
        return seen.paidAt !== null && seen.paidAt !== undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(seen.totalCents).toBe(3998);
  });
});
