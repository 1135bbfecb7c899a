import { createHash } from 'node:crypto';
import { describe, it } from '@jest/globals';
import fc from 'fast-check';
import type { DataSource } from 'typeorm';
import { ClaimCheckReader } from '../../libs/reliable-messaging/src/claim-check/claim-check-reader.service';
import { PostgresClaimCheckStore } from '../../libs/reliable-messaging/src/claim-check/postgres-claim-check.store';
import type { ClaimCheckStore } from '../../libs/reliable-messaging/src/options/claim-check.options';
import type { ResolvedMessagingOptions } from '../../libs/reliable-messaging/src/options/reliable-messaging.options';
import { headerDate, readDeadLetter } from '../../libs/reliable-messaging/src/dead-letter/dead-letter-record';
import { InvalidMessageError } from '../../libs/reliable-messaging/src/errors/invalid-message.error';
import { DEAD_LETTER_HEADERS, HEADERS } from '../../libs/reliable-messaging/src/reliable-messaging.constants';
import { HOSTILE_CLAIM_CHECK_HEADERS, HOSTILE_DEAD_LETTER_HEADERS } from './corpus/hostile-inputs';
import {
  expectWellFormed,
  fuzz,
  FuzzCrash,
  FUZZ_TIMEOUT_MS,
  refusedBy,
  refusedByAsync,
} from './support/fuzz-harness';
import {
  amqpTimestamp,
  hostileHeaderValue,
  hostileHeaders,
  hostileString,
  ownProperties,
} from './support/hostile-arbitraries';

/** The headers a publisher writes and the module reads back: claim-check references and dead-letter records. */

const STORED_ID = '0190a5f2-3c4d-7e5f-8a6b-9c0d1e2f3a4b';
const STORED_BODY = Buffer.from('{"orderId":"o-1"}');
const STORED_SHA256 = createHash('sha256').update(STORED_BODY).digest('hex');
const MAX_BODY_BYTES = 1024;

/** The PostgreSQL store's own reading of references, over an in-memory table with one body. */
const postgres = new PostgresClaimCheckStore({} as DataSource);
const store = {
  kind: 'postgres',
  locate: (reference: string) => postgres.locate(reference),
  get: async (location: string) => (location === STORED_ID ? STORED_BODY : undefined),
} as unknown as ClaimCheckStore;
const reader = new ClaimCheckReader({
  claimCheck: { store, maxBodyBytes: MAX_BODY_BYTES },
} as unknown as ResolvedMessagingOptions);

/** Claim-check headers: each one either right, or of any value, so every check is reached. */
const claimCheckHeaders = fc
  .record({
    reference: fc.oneof(fc.constant(`postgres:${STORED_ID}`), hostileString, hostileHeaderValue),
    bytes: fc.oneof(fc.constantFrom(STORED_BODY.length, String(STORED_BODY.length)), hostileHeaderValue),
    sha256: fc.oneof(fc.constant(STORED_SHA256), hostileHeaderValue),
    field: fc.oneof(
      fc.constant(undefined),
      fc.constantFrom('attachment', 'a.b', '__proto__'),
      hostileHeaderValue,
    ),
    other: hostileHeaders([HEADERS.claimCheck]),
  })
  .map(({ reference, bytes, sha256, field, other }) => ({
    ...other,
    [HEADERS.claimCheck]: reference,
    [HEADERS.claimCheckBytes]: bytes,
    [HEADERS.claimCheckSha256]: sha256,
    [HEADERS.claimCheckField]: field,
  }));

const DEAD_LETTER_HEADER_NAMES = [...Object.values(DEAD_LETTER_HEADERS), HEADERS.idempotencyKey, 'x-death'];

/** A dead letter's headers, x-death included, each of any value; x-death often as the broker writes it. */
const deadLetterMessage = fc.record({
  headers: fc.oneof(
    hostileHeaders(DEAD_LETTER_HEADER_NAMES),
    fc
      .tuple(
        hostileHeaders(DEAD_LETTER_HEADER_NAMES),
        fc.array(
          fc
            .record({
              queue: hostileHeaderValue,
              reason: hostileHeaderValue,
              exchange: hostileHeaderValue,
              'routing-keys': fc.oneof(fc.array(hostileHeaderValue, { maxLength: 3 }), hostileHeaderValue),
              time: fc.oneof(amqpTimestamp, hostileHeaderValue),
              count: hostileHeaderValue,
            })
            .map(ownProperties),
          { maxLength: 3 },
        ),
      )
      .map(([headers, deaths]) => ({ ...headers, 'x-death': deaths })),
    fc.constantFrom(undefined, null),
  ),
  messageId: hostileHeaderValue,
  type: hostileHeaderValue,
  correlationId: hostileHeaderValue,
  contentType: hostileHeaderValue,
});

describe('fuzz: message headers', () => {
  it(
    'claim-check headers give the stored body back or refuse with an InvalidMessageError naming the reason',
    async () => {
      await fuzz(
        {
          name: 'ClaimCheckReader.stored',
          run: (headers: Record<string, unknown>) =>
            refusedByAsync(
              InvalidMessageError,
              async () => {
                const stored = await reader.stored(headers);
                expectWellFormed(
                  stored.location === STORED_ID && stored.body.equals(STORED_BODY),
                  `a claim check gave ${stored.location}`,
                );
                return stored;
              },
              (error) => error.reason,
            ),
        },
        claimCheckHeaders,
        HOSTILE_CLAIM_CHECK_HEADERS.map((entry) => entry.headers),
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'readDeadLetter never throws and reads every header of the wrong shape as absent',
    async () => {
      await fuzz(
        {
          name: 'readDeadLetter',
          run: (message: Record<string, unknown>) => {
            const { headers, ...properties } = message;
            const outcome = refusedBy(Error, () =>
              readDeadLetter(
                { content: Buffer.from('{}'), properties: { ...properties, headers } as never },
                'orders.dlq',
              ),
            );
            expectWellFormed(outcome.kind === 'accepted', 'readDeadLetter threw');
            const dead = (outcome as { value: ReturnType<typeof readDeadLetter> }).value;
            expectWellFormed(typeof dead.queue === 'string', `queue is ${typeof dead.queue}`);
            expectWellFormed(
              (typeof dead.reason === 'string' && dead.reason !== '') || dead.reason === '',
              'reason is not a string',
            );
            expectWellFormed(
              Number.isInteger(dead.deadLetterCount) && dead.deadLetterCount >= 0,
              `deadLetterCount ${dead.deadLetterCount}`,
            );
            expectWellFormed(
              dead.attempts === undefined || (Number.isInteger(dead.attempts) && dead.attempts >= 0),
              `attempts ${dead.attempts}`,
            );
            for (const date of [dead.firstFailureAt, dead.deadLetteredAt, dead.replayedAt]) {
              expectWellFormed(date === undefined || !Number.isNaN(date.getTime()), 'an invalid date');
            }
            for (const text of [
              dead.messageId,
              dead.type,
              dead.errorClass,
              dead.errorMessage,
              dead.exchange,
              dead.routingKey,
              dead.contentType,
            ]) {
              expectWellFormed(text === undefined || typeof text === 'string', `a field is a ${typeof text}`);
            }
            return outcome;
          },
        },
        deadLetterMessage as fc.Arbitrary<Record<string, unknown>>,
        HOSTILE_DEAD_LETTER_HEADERS.filter((entry) => !entry.finding).map((entry) => ({
          headers: entry.headers,
        })),
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'headerDate gives a valid Date or nothing, for any value',
    async () => {
      await fuzz(
        {
          name: 'headerDate',
          run: (value: unknown) => {
            const date = headerDate(value);
            expectWellFormed(
              date === undefined || (date instanceof Date && !Number.isNaN(date.getTime())),
              'an invalid date',
            );
            return date ? { kind: 'accepted', value: date } : { kind: 'refused', reason: 'absent' };
          },
        },
        hostileHeaderValue,
        HOSTILE_DEAD_LETTER_HEADERS.filter((entry) => !entry.finding).flatMap((entry) =>
          Object.values(entry.headers),
        ),
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'readDeadLetter never throws for an AMQP timestamp whose value is a table with string valueOf and toString',
    async () => {
      await fuzz(
        {
          name: 'readDeadLetter timestamps',
          run: (headers: Record<string, unknown>) =>
            refusedBy(FuzzCrash, () =>
              readDeadLetter({ content: Buffer.alloc(0), properties: { headers } as never }, 'orders.dlq'),
            ),
        },
        fc.constantFrom(
          ...HOSTILE_DEAD_LETTER_HEADERS.filter((entry) => entry.finding === 'header-date').map(
            (entry) => entry.headers,
          ),
        ),
        [],
        20,
      );
    },
    FUZZ_TIMEOUT_MS,
  );
});
