import { describe, it } from '@jest/globals';
import { HttpException } from '@nestjs/common';
import fc from 'fast-check';
import { readIdempotencyKey } from '../../libs/reliable-messaging/src/idempotency/idempotency-key-header';
import { requestFingerprint } from '../../libs/reliable-messaging/src/idempotency/request-fingerprint';
import { readDeadLetter } from '../../libs/reliable-messaging/src/dead-letter/dead-letter-record';
import {
  filterOf,
  limitArgument,
  limitOf as cliLimitOf,
} from '../../libs/reliable-messaging-admin/src/cli/filter-flags';
import { applyJsonEdits } from '../../libs/reliable-messaging-admin/src/cli/json-edits';
import { parseDeadLetterFilter } from '../../libs/reliable-messaging-admin/src/dead-letter/dead-letter-filter';
import { checkEditedBody } from '../../libs/reliable-messaging-admin/src/dead-letter/edited-body';
import { InvalidDeadLetterQueryError } from '../../libs/reliable-messaging-admin/src/errors/invalid-dead-letter-query.error';
import { answer, flagOf, limitOf, noteOf } from '../../libs/reliable-messaging-admin/src/http/admin-request';
import type { ResolvedDeadLetterAdminOptions } from '../../libs/reliable-messaging-admin/src/http/dead-letter-admin.options';
import { field, fields } from '../../libs/reliable-messaging-admin/src/http/console/console-http';
import {
  filterFieldsOf,
  listLimit,
  outboxSelectionFieldsOf,
  outboxSelectionOf,
  selectionFieldsOf,
  selectionOf,
} from '../../libs/reliable-messaging-admin/src/http/console/console-selection';
import { parseOutboxFilter } from '../../libs/reliable-messaging-admin/src/outbox/outbox-filter';
import { HOSTILE_EDITS, HOSTILE_FILTERS, HOSTILE_IDEMPOTENCY_KEYS } from './corpus/hostile-inputs';
import {
  expectWellFormed,
  fuzz,
  FUZZ_TIMEOUT_MS,
  FuzzCrash,
  refusedBy,
  refusedByAsync,
  type Outcome,
} from './support/fuzz-harness';
import {
  hostileBody,
  hostileHeaderValue,
  hostileJsonText,
  hostileJsonTextUpTo,
  hostileKey,
  hostileString,
  ownProperties,
} from './support/hostile-arbitraries';

/**
 * What HTTP clients and operators send: idempotency keys and request bodies, the admin API's filters and
 * options, the console's forms, the command line's flags and `--set` edits. A refusal must be an
 * InvalidDeadLetterQueryError, which the admin API answers with 400 (checked through its own `answer()`).
 */

const OPTIONS = { maxBatchSize: 500 } as ResolvedDeadLetterAdminOptions;
const FILTER_FIELDS = [
  'queue',
  'messageIds',
  'messageId',
  'errorClass',
  'type',
  'reason',
  'since',
  'until',
  'text',
];
const OUTBOX_FIELDS = ['ids', 'type', 'orderingKey', 'since', 'until', 'text'];
const OPTION_FIELDS = ['limit', 'dryRun', 'allowEmpty', 'all', 'note', 'confirm', 'id'];

/** A query or JSON body: the known fields with values of any type, times and ids often well-formed. */
function adminInput(names: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  const value = fc.oneof(
    hostileHeaderValue,
    hostileString,
    fc.constantFrom('30m', '7d', '2026-05-01T10:00:00Z', '2026-05-01', true, false, 1, '1', 'm-1,m-2'),
    fc.array(hostileString, { maxLength: 4 }),
  );
  return fc
    .tuple(
      fc.dictionary(fc.constantFrom(...names, ...OPTION_FIELDS), value),
      fc.dictionary(hostileKey, value, { maxKeys: 2 }),
    )
    .map(([known, other]) => ownProperties({ ...other, ...known }));
}

/** Runs a parser as the admin API does, through answer(): a refusal must come out as an HTTP 4xx with a message. */
async function asHttp(work: () => unknown): Promise<Outcome> {
  try {
    return { kind: 'accepted', value: await answer(async () => work()) };
  } catch (error) {
    if (!(error instanceof HttpException) || error.getStatus() < 400 || error.getStatus() > 499) {
      const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new FuzzCrash(`answered ${what.slice(0, 300)}, not a 4xx`);
    }
    return { kind: 'refused', reason: error.message };
  }
}

/** A dead letter read from headers, with a body: what `--set` and the console's edit work on. */
function deadLetterWith(body: Buffer, headers: Record<string, unknown> = {}, contentType?: string) {
  return readDeadLetter({ content: body, properties: { headers, contentType } as never }, 'orders.dlq');
}

/** Bodies within what Nest's body parser makes of ordinary requests; deeper ones are a finding (below). */
const fingerprintBody = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  hostileJsonTextUpTo(64).map((text) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }),
);

/** Bodies nested 20,000 to 30,000 deep, as Express' JSON parser (no depth limit) hands them over. */
const DEEP_BODIES: unknown[] = [20_000, 25_000, 30_000].map((depth): unknown =>
  JSON.parse('['.repeat(depth) + ']'.repeat(depth)),
);

describe('fuzz: HTTP and admin input', () => {
  it(
    'readIdempotencyKey gives a key of 1 to 255 printable ASCII characters, or a problem to answer 400 with',
    async () => {
      await fuzz(
        {
          name: 'readIdempotencyKey',
          run: (values: string[] | undefined) => {
            const reading = readIdempotencyKey(values);
            if (reading.kind === 'invalid') return { kind: 'refused', reason: reading.problem };
            if (reading.kind === 'key') {
              expectWellFormed(
                /^[\x20-\x7e]{1,255}$/.test(reading.key),
                `the key ${JSON.stringify(reading.key).slice(0, 60)}`,
              );
            } else {
              expectWellFormed(values === undefined || values.length === 0, 'a header read as absent');
            }
            return { kind: 'accepted', value: reading };
          },
        },
        fc.oneof(
          fc.constant(undefined),
          fc.array(
            fc.oneof(
              hostileString,
              hostileString.map((text) => `"${text}"`),
            ),
            { maxLength: 3 },
          ),
        ),
        HOSTILE_IDEMPOTENCY_KEYS.map((entry) => entry.values),
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'requestFingerprint gives a SHA-256 for any method, path and parsed body',
    async () => {
      await fuzz(
        {
          name: 'requestFingerprint',
          run: (input: { method: string; path: string; body: unknown }) => {
            const fingerprint = requestFingerprint(input);
            expectWellFormed(/^[0-9a-f]{64}$/.test(fingerprint), `fingerprint ${fingerprint}`);
            return { kind: 'accepted', value: fingerprint };
          },
        },
        fc.record({ method: hostileString, path: hostileString, body: fingerprintBody }),
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'two bodies that differ only under a __proto__ key have different fingerprints',
    async () => {
      await fuzz(
        {
          name: 'requestFingerprint __proto__',
          run: ([a, b]: [unknown, unknown]) => {
            const bodyA = JSON.parse(`{"__proto__":${JSON.stringify(a)}}`) as unknown;
            const bodyB = JSON.parse(`{"__proto__":${JSON.stringify(b)}}`) as unknown;
            const same =
              requestFingerprint({ method: 'POST', path: '/orders', body: bodyA }) ===
              requestFingerprint({ method: 'POST', path: '/orders', body: bodyB });
            expectWellFormed(!same, 'two different bodies share one fingerprint');
            return { kind: 'accepted', value: same };
          },
        },
        fc
          .tuple(
            fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), fc.integer(), { minKeys: 1 }),
            fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), fc.integer(), { minKeys: 1 }),
          )
          .filter(([a, b]) => JSON.stringify(a) !== JSON.stringify(b)),
        [],
        100,
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'a body nested 20,000 deep gets a fingerprint (it was a RangeError, an HTTP 500)',
    async () => {
      await fuzz(
        {
          name: 'requestFingerprint depth',
          // The bodies are built before the cases: JSON.parse of them is the parser's cost, not the fingerprint's,
          // and fast-check is handed only an index (it would recurse into a deep value to print it).
          run: (index: number) =>
            refusedBy(FuzzCrash, () =>
              requestFingerprint({ method: 'POST', path: '/orders', body: DEEP_BODIES[index] }),
            ),
        },
        fc.integer({ min: 0, max: DEEP_BODIES.length - 1 }),
        [],
        20,
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    "the admin API's dead-letter filter and options parse, or answer 400 with what to write",
    async () => {
      await fuzz(
        {
          name: 'parseDeadLetterFilter (API)',
          run: (input: Record<string, unknown>) =>
            asHttp(() => {
              const ids = input.messageIds ?? input.messageId;
              const filter = parseDeadLetterFilter({
                ...input,
                messageIds: typeof ids === 'string' ? ids.split(',') : ids,
              });
              for (const date of [filter.since, filter.until]) {
                expectWellFormed(
                  date === undefined || !Number.isNaN(date.getTime()),
                  'an invalid date in a filter',
                );
              }
              return [
                filter,
                limitOf(input.limit, OPTIONS),
                flagOf(input, 'dryRun'),
                flagOf(input, 'all'),
                noteOf(input),
              ];
            }),
        },
        adminInput(FILTER_FIELDS),
        HOSTILE_FILTERS.map((entry) => entry.input),
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    "the admin API's outbox filter parses, or answers 400 with what to write",
    async () => {
      await fuzz(
        {
          name: 'parseOutboxFilter (API)',
          run: (input: Record<string, unknown>) =>
            asHttp(() => {
              const filter = parseOutboxFilter(input);
              for (const date of [filter.since, filter.until]) {
                expectWellFormed(
                  date === undefined || !Number.isNaN(date.getTime()),
                  'an invalid date in a filter',
                );
              }
              return filter;
            }),
        },
        adminInput(OUTBOX_FIELDS),
        HOSTILE_FILTERS.map((entry) => entry.input),
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    "the console's forms give a selection, or a 400 with what to write",
    async () => {
      await fuzz(
        {
          name: 'console forms',
          run: (form: Record<string, unknown>) =>
            asHttp(() => {
              for (const name of [...FILTER_FIELDS, ...OPTION_FIELDS]) {
                const one = field(form, name);
                expectWellFormed(
                  one === undefined || typeof one === 'string',
                  `field ${name} is a ${typeof one}`,
                );
                expectWellFormed(
                  fields(form, name).every((item) => typeof item === 'string' && item !== ''),
                  `fields ${name}`,
                );
              }
              const shown = filterFieldsOf(form);
              expectWellFormed(
                Object.values(shown).every((value) => typeof value === 'string'),
                'a shown field is not text',
              );
              return [
                selectionOf(selectionFieldsOf(form)),
                outboxSelectionOf(outboxSelectionFieldsOf(form)),
                listLimit(field(form, 'limit'), 200),
              ];
            }),
        },
        adminInput([...FILTER_FIELDS, ...OUTBOX_FIELDS]),
        HOSTILE_FILTERS.map((entry) => entry.input),
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    "the command line's filter flags parse, or are refused with an InvalidDeadLetterQueryError",
    async () => {
      await fuzz(
        {
          name: 'CLI filter flags',
          run: ({ flags, ids }: { flags: Record<string, unknown>; ids: string[] }) =>
            refusedBy(InvalidDeadLetterQueryError, () => {
              if (typeof flags.limit === 'string') limitArgument(flags.limit);
              return [filterOf(flags, ids), cliLimitOf(flags, 10)];
            }),
        },
        fc.record({
          flags: fc
            .dictionary(
              fc.constantFrom('queue', 'errorClass', 'type', 'reason', 'since', 'until', 'text', 'limit'),
              fc.oneof(
                hostileString,
                fc.constantFrom('30m', '2026-05-01T10:00:00Z', '0', '-1', '1.5', '1e3'),
              ),
            )
            .chain((flags) =>
              fc
                .array(hostileString, { maxLength: 3 })
                .map((id) => ownProperties({ ...flags, ...(id.length > 0 ? { id } : {}) })),
            ),
          ids: fc.array(hostileString, { maxLength: 3 }),
        }),
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    '--set edits give a JSON body or are refused with an InvalidDeadLetterQueryError, and pollute nothing',
    async () => {
      await fuzz(
        {
          name: 'applyJsonEdits',
          run: ({ body, edits }: { body: Buffer; edits: string[] }) =>
            refusedBy(InvalidDeadLetterQueryError, () => {
              const edited = applyJsonEdits(deadLetterWith(body), edits);
              expectWellFormed(
                typeof JSON.parse(edited.toString('utf8')) === 'object',
                'an edit made a body that is not an object',
              );
              return edited;
            }),
        },
        fc.record({
          body: fc.oneof(hostileBody, fc.constant(Buffer.from('{"a":{"b":1}}'))),
          edits: fc.array(
            fc
              .tuple(
                fc
                  .array(fc.oneof(hostileKey, fc.constantFrom('a', 'b', 'a.b')), {
                    minLength: 1,
                    maxLength: 4,
                  })
                  .map((path) => path.join('.')),
                fc.oneof(hostileString, hostileJsonText),
              )
              .map(([path, value]) => `${path}=${value}`),
            { maxLength: 3 },
          ),
        }),
        HOSTILE_EDITS,
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'an edited body is checked as the consumer would check it, or refused with an InvalidDeadLetterQueryError',
    async () => {
      await fuzz(
        {
          name: 'checkEditedBody',
          run: ({
            body,
            field: claimed,
            contentType,
          }: {
            body: Buffer;
            field: unknown;
            contentType: string | undefined;
          }) =>
            refusedByAsync(InvalidDeadLetterQueryError, async () =>
              checkEditedBody(
                deadLetterWith(
                  Buffer.from('{}'),
                  ownProperties({ 'rm-claim-check-field': claimed }),
                  contentType,
                ),
                body,
                64 * 1024,
              ),
            ),
        },
        fc.record({
          body: hostileBody,
          field: fc.oneof(fc.constant(undefined), hostileHeaderValue),
          contentType: fc.oneof(
            fc.constantFrom(undefined, 'application/json', 'APPLICATION/JSON; charset=utf-8', 'text/plain'),
            hostileString,
          ),
        }),
      );
    },
    FUZZ_TIMEOUT_MS,
  );
});
