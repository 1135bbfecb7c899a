import 'reflect-metadata';
import { describe, it } from '@jest/globals';
import type { Channel, ConsumeMessage, MessageProperties } from 'amqplib';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Min, ValidateNested } from 'class-validator';
import fc from 'fast-check';
import type { ConsumerPlan } from '../../libs/reliable-messaging/src/consuming/consumer-plan';
import { InvalidMessageError } from '../../libs/reliable-messaging/src/errors/invalid-message.error';
import { DEFAULT_JSON_LIMITS } from '../../libs/reliable-messaging/src/options/json-limits.options';
import { readAttempt, readEnvelope } from '../../libs/reliable-messaging/src/envelope/envelope-reader';
import { decodeStage } from '../../libs/reliable-messaging/src/pipeline/decode.middleware';
import { InboundDelivery } from '../../libs/reliable-messaging/src/pipeline/inbound-delivery';
import { HEADERS } from '../../libs/reliable-messaging/src/reliable-messaging.constants';
import { defaultErrorClassifier } from '../../libs/reliable-messaging/src/retry/error-classifier';
import { HOSTILE_BODIES, HOSTILE_PROPERTIES } from './corpus/hostile-inputs';
import {
  expectWellFormed,
  fuzz,
  FUZZ_TIMEOUT_MS,
  FuzzCrash,
  refusedBy,
  type Outcome,
} from './support/fuzz-harness';
import {
  hostileBodyUpTo,
  hostileHeaderValue,
  hostileHeaders,
  hostileString,
  hostileNumber,
} from './support/hostile-arbitraries';

/**
 * The consume path's decoder, whole: the envelope reader, Nest's RMQ packet, the size limit, strict UTF-8, safe
 * JSON and class-validator, driven as a consumer drives it. Every delivery must end exactly one way: handed to
 * the next stage with a payload, or refused with an InvalidMessageError, which the error classifier dead-letters
 * at once (never a retry), its reason named.
 */

class OrderLine {
  @IsString() sku!: string;
  @IsInt() @Min(1) qty!: number;
}

class OrderPlaced {
  @IsString() orderId!: string;
  @IsInt() totalCents!: number;
  @IsOptional() @IsString() note?: string;
  @ValidateNested({ each: true }) @Type(() => OrderLine) lines!: OrderLine[];
}

const PLAN: Parameters<typeof decodeStage>[0] = {
  name: 'OrderHandler.onOrderPlaced',
  messageClass: OrderPlaced,
  messageTypes: ['order.placed'],
  acceptedMajorVersions: [1],
  maxPayloadBytes: 1024 * 1024,
  jsonLimits: DEFAULT_JSON_LIMITS,
  accept: ['envelope', 'nest-rmq'],
};
const STAGE = decodeStage(PLAN);

/** Nesting the general properties stay within, so their cases stay fast; the depth property below goes deeper. */
const SHALLOW = 64;

/** Whether a body names `constructor`, which the property below covers. */
function namesConstructor(delivery: Delivery): boolean {
  return delivery.body.includes('constructor') || delivery.body.includes('\\u');
}

interface Delivery {
  properties: Record<string, unknown>;
  body: Buffer;
}

/** The envelope of a well-formed message; the bodies of the corpus go with it. */
const GOOD_PROPERTIES = {
  type: 'order.placed',
  messageId: 'm-1',
  contentType: 'application/json',
  headers: { [HEADERS.idempotencyKey]: 'k-1', [HEADERS.schemaVersion]: '1.0' },
};

/** A well-formed envelope half the time, so the body's checks are reached; else properties of any shape. */
const deliveryArbitrary: fc.Arbitrary<Delivery> = fc.record({
  properties: fc.oneof(
    fc.constant(GOOD_PROPERTIES),
    fc.record(
      {
        type: fc.oneof(fc.constantFrom('order.placed', undefined, null), hostileHeaderValue),
        messageId: fc.oneof(fc.constant('m-1'), hostileHeaderValue),
        contentType: fc.oneof(
          fc.constantFrom('application/json', 'application/json; charset=utf-8'),
          hostileHeaderValue,
        ),
        correlationId: hostileHeaderValue,
        replyTo: fc.oneof(fc.constant(undefined), hostileString),
        timestamp: fc.oneof(hostileNumber, hostileHeaderValue),
        appId: hostileHeaderValue,
        headers: fc.oneof(hostileHeaders(Object.values(HEADERS)), fc.constantFrom(undefined, null)),
      },
      { requiredKeys: [] },
    ),
  ),
  body: fc.oneof(
    hostileBodyUpTo(SHALLOW),
    fc
      .record({
        // JSON values, not header values: a Buffer's JSON is an array of 70,000 numbers (a finding, below).
        orderId: fc.oneof(fc.string(), hostileString, fc.jsonValue({ maxDepth: 3 })),
        totalCents: fc.oneof(fc.integer(), hostileNumber),
        lines: fc.array(fc.record({ sku: fc.string(), qty: fc.integer() }), { maxLength: 3 }),
      })
      .map((order) =>
        Buffer.from(
          JSON.stringify(order, (_key, value: unknown) =>
            typeof value === 'bigint' ? String(value) : value,
          ) ?? '',
        ),
      ),
    fc
      .record({
        pattern: fc.oneof(fc.constant('order.placed'), hostileString),
        data: fc.jsonValue({ maxDepth: 3 }),
      })
      .map((packet) => Buffer.from(JSON.stringify(packet))),
  ),
});

async function decode({ properties, body }: Delivery): Promise<Outcome> {
  const raw = {
    content: body,
    fields: FIELDS,
    properties: properties as unknown as MessageProperties,
  };
  const delivery = new InboundDelivery(raw, PLAN as ConsumerPlan, {} as Channel);
  let handed = 0;
  try {
    await STAGE(async (reached) => {
      handed += 1;
      expectWellFormed(reached.envelope !== undefined, 'a delivery reached the handler without its envelope');
    })(delivery);
  } catch (error) {
    expectWellFormed(handed === 0, 'a delivery was both handed on and refused');
    if (!(error instanceof InvalidMessageError)) {
      const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new FuzzCrash(`the decoder threw ${what.slice(0, 300)}, which is retried, instead of refusing`);
    }
    expectWellFormed(defaultErrorClassifier(error) === 'dead-letter', 'a refusal would be retried');
    return { kind: 'refused', reason: error.reason };
  }
  expectWellFormed(handed === 1, `a delivery was handed on ${handed} times and not refused`);
  return { kind: 'accepted', value: delivery.payload };
}

const FIELDS = {
  deliveryTag: 1,
  redelivered: false,
  exchange: 'events',
  routingKey: 'order.placed',
  consumerTag: 'c',
};

const CORPUS: Delivery[] = [
  ...HOSTILE_BODIES.filter((entry) => !entry.finding && nesting(entry.body) <= SHALLOW).flatMap((entry) => [
    { properties: GOOD_PROPERTIES, body: entry.body },
    { properties: { ...GOOD_PROPERTIES, type: undefined }, body: entry.body },
  ]),
  ...HOSTILE_PROPERTIES.map((entry) => ({ properties: entry.properties, body: Buffer.from('{}') })),
];

describe('fuzz: the message decoder', () => {
  it(
    'every delivery is handed on once with a payload, or refused with an InvalidMessageError that is dead-lettered',
    async () => {
      await fuzz(
        { name: 'decodeStage', run: decode },
        deliveryArbitrary.filter((delivery) => !namesConstructor(delivery)),
        CORPUS,
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'the envelope reader returns a well-formed envelope or refuses with an InvalidMessageError',
    async () => {
      await fuzz(
        {
          name: 'readEnvelope',
          run: ({ properties, body }: Delivery) => {
            const raw = { content: body, fields: FIELDS, properties } as unknown as ConsumeMessage;
            const outcome = refusedBy(
              InvalidMessageError,
              () => [readEnvelope(raw), readAttempt(raw)],
              (error) => error.reason,
            );
            if (outcome.kind === 'accepted') {
              const [envelope, attempt] = outcome.value as [ReturnType<typeof readEnvelope>, number];
              for (const name of [
                'messageId',
                'idempotencyKey',
                'type',
                'schemaVersion',
                'correlationId',
              ] as const) {
                const value = envelope[name];
                expectWellFormed(
                  typeof value === 'string' && value.length > 0 && value.length <= 256,
                  `${name} is ${String(value)}`,
                );
              }
              expectWellFormed(!Number.isNaN(envelope.occurredAt.getTime()), 'occurredAt is an invalid date');
              expectWellFormed(
                Number.isInteger(attempt) && attempt >= 1 && attempt <= 10_000,
                `attempt ${attempt}`,
              );
            }
            return outcome;
          },
        },
        deliveryArbitrary,
        CORPUS,
      );
    },
    FUZZ_TIMEOUT_MS,
  );

  it(
    'a body nested 20,000 deep, with 5,000 keys, 70,000 elements or a constructor key is refused within 50 ms (each was a RangeError or TypeError, retried, or slow)',
    async () => {
      await fuzz(
        { name: 'decodeStage depth', run: decode },
        fc
          .constantFrom(...HOSTILE_BODIES.filter((entry) => entry.finding || nesting(entry.body) > SHALLOW))
          .map((entry) => ({ properties: GOOD_PROPERTIES, body: entry.body })),
        [],
        20,
      );
    },
    FUZZ_TIMEOUT_MS,
  );
});

/** How deep a JSON text's brackets nest (strings are not skipped: a rough measure, enough for the corpus). */
function nesting(body: Buffer): number {
  let depth = 0;
  let deepest = 0;
  for (const byte of body) {
    if (byte === 0x7b || byte === 0x5b) deepest = Math.max(deepest, (depth += 1));
    else if (byte === 0x7d || byte === 0x5d) depth -= 1;
  }
  return deepest;
}
