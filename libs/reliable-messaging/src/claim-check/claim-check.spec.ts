import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import type { DataSource } from 'typeorm';
import { MessageType } from '../decorators/message-type.decorator';
import { ConfigurationError } from '../errors/configuration.error';
import { PayloadTooLargeError } from '../errors/publish.error';
import { HEADERS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import {
  resolveClaimCheckOptions,
  type ClaimCheckOptions,
  type ClaimCheckStore,
} from '../options/claim-check.options';
import { ClaimCheckReader } from './claim-check-reader.service';
import { ClaimCheckWriter } from './claim-check-writer.service';
import { FilesystemClaimCheckStore } from './filesystem-claim-check.store';
import { PostgresClaimCheckStore } from './postgres-claim-check.store';

const RETRY = { maxAttempts: 6, maxDelayMs: 60_000 };
const STORE = new FilesystemClaimCheckStore('/var/claim-check');
const DATABASE_STORE = (dataSource: DataSource) => new PostgresClaimCheckStore(dataSource);

describe('resolveClaimCheckOptions', () => {
  it('applies the documented defaults, with the PostgreSQL store when the module has a dataSource', () => {
    const resolved = resolveClaimCheckOptions(undefined, {} as DataSource, RETRY, DATABASE_STORE);
    expect(resolved).toMatchObject({
      thresholdBytes: undefined,
      maxBodyBytes: 64 * 1024 * 1024,
      timeToLiveMs: 14 * 24 * 3_600_000,
      deadLetterTimeToLiveMs: 365 * 24 * 3_600_000,
      pruneIntervalMs: 300_000,
    });
    expect(resolved.store).toBeInstanceOf(PostgresClaimCheckStore);
  });

  it('does not hold an app that does not configure the claim check to its time to live', () => {
    const longRetries = { maxAttempts: 20, maxDelayMs: 86_400_000 };
    expect(() =>
      resolveClaimCheckOptions(undefined, {} as DataSource, longRetries, DATABASE_STORE),
    ).not.toThrow();
    expect(() => resolveClaimCheckOptions({}, {} as DataSource, longRetries, DATABASE_STORE)).toThrow(
      /shorter than the retry schedule/,
    );
  });

  it('has no store without a dataSource when the claim check is not configured', () => {
    expect(resolveClaimCheckOptions(undefined, undefined, RETRY).store).toBeUndefined();
  });

  it.each<[string, ClaimCheckOptions, RegExp]>([
    ['no store and no dataSource', { thresholdBytes: 1024 }, /needs a store without a dataSource/],
    ['a negative threshold', { store: STORE, thresholdBytes: -1 }, /claimCheck\.thresholdBytes/],
    ['a fractional body limit', { store: STORE, maxBodyBytes: 1.5 }, /claimCheck\.maxBodyBytes/],
    [
      'a dead-letter time to live under 1 s',
      { store: STORE, deadLetterTimeToLiveMs: 10 },
      /claimCheck\.deadLetterTimeToLiveMs/,
    ],
    ['a prune interval under 1 s', { store: STORE, pruneIntervalMs: 10 }, /claimCheck\.pruneIntervalMs/],
    [
      'a time to live shorter than the retry schedule',
      { store: STORE, timeToLiveMs: 60_000 },
      /shorter than the retry schedule \(retry\.maxAttempts × retry\.maxDelayMs = 360000 ms\)/,
    ],
  ])('refuses %s', (_case, options, message) => {
    expect(() => resolveClaimCheckOptions(options, undefined, RETRY)).toThrow(ConfigurationError);
    expect(() => resolveClaimCheckOptions(options, undefined, RETRY)).toThrow(message);
  });
});

describe('@MessageType({ claimCheck })', () => {
  it.each([
    [{ thresholdBytes: -1 }, /thresholdBytes must be a whole number/],
    [{ thresholdBytes: 10, field: '__proto__' }, /claimCheck\.field must name a property/],
    [{ thresholdBytes: 10, field: 'a.b' }, /claimCheck\.field must name a property/],
  ])('refuses %j', (claimCheck, message) => {
    expect(() => MessageType({ type: 't', claimCheck })).toThrow(message);
  });
});

describe('ClaimCheckWriter.offload', () => {
  function writer(claimCheck: Partial<ResolvedMessagingOptions['claimCheck']>): ClaimCheckWriter {
    return new ClaimCheckWriter({
      claimCheck: { maxBodyBytes: 1000, timeToLiveMs: 3_600_000, pruneIntervalMs: 60_000, ...claimCheck },
    } as ResolvedMessagingOptions);
  }
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));

  it.each<
    [
      string,
      Partial<ResolvedMessagingOptions['claimCheck']>,
      { thresholdBytes: number; field?: string } | undefined,
      object,
      boolean,
    ]
  >([
    ['no threshold anywhere', { store: STORE }, undefined, { text: 'x'.repeat(500) }, false],
    [
      'the module threshold, body above it',
      { store: STORE, thresholdBytes: 100 },
      undefined,
      { text: 'x'.repeat(500) },
      true,
    ],
    [
      'the module threshold, body under it',
      { store: STORE, thresholdBytes: 1000 },
      undefined,
      { text: 'x'.repeat(500) },
      false,
    ],
    [
      'a class threshold over the module one',
      { store: STORE, thresholdBytes: 100 },
      { thresholdBytes: 900 },
      { text: 'x'.repeat(500) },
      false,
    ],
    [
      'a field above the threshold',
      { store: STORE },
      { thresholdBytes: 100, field: 'note' },
      { id: 1, note: 'x'.repeat(500) },
      true,
    ],
    ['a field that is absent', { store: STORE }, { thresholdBytes: 0, field: 'note' }, { id: 1 }, false],
  ])('with %s: stored %s', (_case, options, own, payload, stored) => {
    const headers: Record<string, string | number> = {};
    const result = writer(options).offload('t', own, payload, json(payload), headers);
    expect(result.claimCheck !== undefined).toBe(stored);
    expect(headers[HEADERS.claimCheck] !== undefined).toBe(stored);
    if (!stored) expect(result.wire).toEqual(json(payload));
  });

  it('sends the message without the field and stores the field alone', () => {
    const headers: Record<string, string | number> = {};
    const payload = { id: 1, note: 'x'.repeat(500) };
    const result = writer({ store: STORE }).offload(
      't',
      { thresholdBytes: 100, field: 'note' },
      payload,
      json(payload),
      headers,
    );
    expect(JSON.parse(result.wire.toString())).toEqual({ id: 1 });
    expect(result.claimCheck?.body).toEqual(json(payload.note));
    expect(headers).toMatchObject({ [HEADERS.claimCheckField]: 'note', [HEADERS.claimCheckBytes]: 502 });
    expect(STORE.locate(headers[HEADERS.claimCheck] as string)).toBe(result.claimCheck?.location);
  });

  it('refuses a body over maxBodyBytes, and a claim check without a store', () => {
    const big = { text: 'x'.repeat(2000) };
    expect(() =>
      writer({ store: STORE, thresholdBytes: 0 }).offload('t', undefined, big, json(big), {}),
    ).toThrow(PayloadTooLargeError);
    expect(() => writer({ thresholdBytes: 0 }).offload('t', undefined, big, json(big), {})).toThrow(
      /goes through the claim check, but the module has no store/,
    );
  });
});

describe("ClaimCheckReader with a store of the app's own", () => {
  /** A store written before `get` took the declared size: it reads whatever the location holds. */
  class LegacyStore implements ClaimCheckStore {
    readonly kind = 'legacy';
    readonly asked: unknown[][] = [];
    constructor(private readonly body: Buffer) {}
    referenceFor(): string {
      return 'legacy:body';
    }
    locate(reference: string): string | undefined {
      return reference === 'legacy:body' ? 'body' : undefined;
    }
    async put(): Promise<void> {}
    async get(...args: [string]): Promise<Buffer | undefined> {
      this.asked.push(args);
      return this.body;
    }
    async delete(): Promise<void> {}
    async deleteExpired(): Promise<number> {
      return 0;
    }
    async stats() {
      return { bodies: 1, bytes: this.body.length };
    }
  }

  function stored(store: ClaimCheckStore, bytes: number, body: string) {
    const reader = new ClaimCheckReader({
      claimCheck: { store, maxBodyBytes: 1000 },
    } as ResolvedMessagingOptions);
    return reader.stored({
      [HEADERS.claimCheck]: 'legacy:body',
      [HEADERS.claimCheckBytes]: bytes,
      [HEADERS.claimCheckSha256]: createHash('sha256').update(body).digest('hex'),
    });
  }

  it('is given the declared size, and still works when it ignores it: the reader checks size and SHA-256', async () => {
    const store = new LegacyStore(Buffer.from('{"a":1}'));
    expect((await stored(store, 7, '{"a":1}')).body.toString()).toBe('{"a":1}');
    expect(store.asked).toEqual([['body', 7]]);
    await expect(stored(new LegacyStore(Buffer.alloc(500)), 10, '0123456789')).rejects.toThrow(
      'claim-check-corrupt',
    );
  });
});
