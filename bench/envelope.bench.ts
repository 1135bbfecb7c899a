import { randomUUID } from 'node:crypto';
import { HEADERS } from 'nestjs-reliable-messaging';
import { benchMessage, rawEnvelope, type BenchEnvelope } from './bench-message';
import { prepublish, rawDrain } from './consume.bench';
import {
  alternate,
  deleteAll,
  MESSAGES,
  rawConnection,
  ROUNDS,
  uniquePrefix,
  type Comparison,
  type Suite,
} from './harness';

/** Prefetch of the raw consumer that drains every variant. */
const PREFETCH = Number(process.env.BENCH_ENVELOPE_PREFETCH ?? 200);

/** Queue types measured: `BENCH_ENVELOPE_QUEUES`, default both. */
const QUEUE_TYPES = (process.env.BENCH_ENVELOPE_QUEUES ?? 'classic,quorum').split(',').map((t) => t.trim());

/** The same body with only a message id and a content type: what the module's envelope is measured against. */
const plain: BenchEnvelope = (n) => ({
  body: Buffer.from(JSON.stringify(benchMessage(n))),
  properties: { messageId: randomUUID(), contentType: 'application/json', persistent: true },
});

/** The envelope as the module wrote it before it was trimmed: `content_encoding`, and a correlation id and ordering key repeating the message id. */
const untrimmed: BenchEnvelope = (n) => {
  const { body, properties } = rawEnvelope(n);
  return {
    body,
    properties: { ...properties, contentEncoding: 'utf-8', correlationId: properties.messageId },
  };
};

/** The module's envelope without one header, to see what each costs. */
function without(header: string): BenchEnvelope {
  return (n) => {
    const { body, properties } = rawEnvelope(n);
    const headers = { ...(properties.headers as Record<string, unknown>) };
    delete headers[header];
    return { body, properties: { ...properties, headers } };
  };
}

/** The module's envelope with its AMQP properties only, no headers. */
const propertiesOnly: BenchEnvelope = (n) => {
  const { body, properties } = rawEnvelope(n);
  return { body, properties: { ...properties, headers: undefined } };
};

const VARIANTS: { name: string; envelope: BenchEnvelope; target?: number }[] = [
  { name: "the module's envelope", envelope: rawEnvelope, target: 0.8 },
  { name: 'the envelope before it was trimmed', envelope: untrimmed },
  { name: "the module's properties, no headers", envelope: propertiesOnly },
  { name: `the module's envelope without ${HEADERS.occurredAt}`, envelope: without(HEADERS.occurredAt) },
  { name: `the module's envelope without ${HEADERS.orderingKey}`, envelope: without(HEADERS.orderingKey) },
];

async function compare(queueType: string): Promise<Comparison[]> {
  const prefix = uniquePrefix(`envelope-${queueType}`);
  const connection = await rawConnection(prefix);
  const queues: string[] = [];
  const declare = async (name: string): Promise<string> => {
    const queue = `${prefix}.${name}`;
    const channel = await connection.createChannel();
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': queueType } });
    await channel.close();
    queues.push(queue);
    return queue;
  };
  try {
    const plainQueue = await declare('plain');
    const comparisons: Comparison[] = [];
    for (const [index, variant] of VARIANTS.entries()) {
      const queue = await declare(`variant-${index}`);
      const runs = await alternate(
        ROUNDS,
        async () => {
          await prepublish(connection, plainQueue, MESSAGES, plain);
          return rawDrain(connection, plainQueue, PREFETCH);
        },
        async () => {
          await prepublish(connection, queue, MESSAGES, variant.envelope);
          return rawDrain(connection, queue, PREFETCH);
        },
      );
      comparisons.push({
        suite: 'envelope',
        scenario: `${queueType} queue, raw consumer at prefetch ${PREFETCH}: only message_id and content_type vs ${variant.name}`,
        ...runs,
        target: variant.target ?? 0,
      });
    }
    return comparisons;
  } finally {
    await deleteAll(connection, { queues });
    await connection.close();
  }
}

/**
 * What the envelope costs the broker and the client library: the same bodies drained by the same raw amqplib
 * consumer, carrying only a message id and a content type, or the module's envelope (and variants of it, to see
 * what each part costs). Persistent in both, as the module publishes.
 */
export const envelopeSuite: Suite = {
  name: 'envelope',
  async run() {
    const comparisons: Comparison[] = [];
    for (const queueType of QUEUE_TYPES) comparisons.push(...(await compare(queueType)));
    return comparisons;
  },
};
