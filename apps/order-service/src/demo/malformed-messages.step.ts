import { randomUUID } from 'node:crypto';
import type { Options } from 'amqplib';
import type { DemoContext, DemoStep } from './demo-step';

/** A message no consumer can handle, published straight to the broker, and the reason it must be refused with. */
export interface MalformedMessage {
  description: string;
  reason: string;
  body: Buffer;
  /** The message type; undefined leaves the `type` property out. */
  type?: string;
  headers?: Record<string, string>;
}

/** A body that would be a valid OrderPlaced, to show that headers are checked too. */
function validOrderPlaced(): Buffer {
  return Buffer.from(
    JSON.stringify({
      orderId: randomUUID(),
      customerId: 'customer-x',
      totalCents: 1000,
      itemCount: 1,
      placedAt: new Date().toISOString(),
    }),
  );
}

/** The bad input the demo sends to the order saga's queue, one of each kind. */
export function malformedMessages(): MalformedMessage[] {
  return [
    {
      description: 'not JSON',
      reason: 'malformed-json',
      type: 'order.placed',
      body: Buffer.from('{"orderId": "'),
    },
    {
      description: 'invalid UTF-8',
      reason: 'invalid-utf8',
      type: 'order.placed',
      body: Buffer.from([0x7b, 0x22, 0x61, 0xff, 0xfe, 0x22, 0x7d]),
    },
    {
      description: 'a __proto__ key',
      reason: 'forbidden-key',
      type: 'order.placed',
      body: Buffer.from(`{"__proto__":{"isAdmin":true},"orderId":"${randomUUID()}"}`),
    },
    {
      description: 'an invalid payload',
      reason: 'validation-failed',
      type: 'order.placed',
      body: Buffer.from(
        '{"orderId":"not-a-uuid","customerId":"","totalCents":-1,"itemCount":0,"placedAt":"soon"}',
      ),
    },
    {
      description: 'an unsupported schema version (2.0)',
      reason: 'unsupported-schema-version',
      type: 'order.placed',
      headers: { 'rm-schema-version': '2.0' },
      body: validOrderPlaced(),
    },
    { description: 'no message type', reason: 'missing-header', body: validOrderPlaced() },
  ];
}

/**
 * Publishes malformed messages with a plain AMQP client, as a buggy or hostile producer would, to the routing
 * key the order saga listens on. Each must end in the order saga's dead-letter queue with its reason while the orders flow on.
 */
export class MalformedMessagesStep implements DemoStep {
  private readonly messages = malformedMessages();

  get title(): string {
    return `${this.messages.length} malformed messages straight to the broker (${this.messages.map((m) => m.description).join(', ')})`;
  }

  async run({ channel, names, ledger }: DemoContext): Promise<void> {
    for (const [index, message] of this.messages.entries()) {
      const messageId = `demo-malformed-${index + 1}`;
      const properties: Options.Publish = {
        messageId,
        contentType: 'application/json',
        persistent: true,
        headers: message.headers ?? {},
      };
      if (message.type) properties.type = message.type;
      channel.publish(names.exchange, 'order.placed', message.body, properties);
      ledger.expectedDeadLetters.push({
        messageId,
        queue: `${names.queues.sagaPlaced}.dlq`,
        reason: message.reason,
        description: message.description,
      });
    }
    await channel.waitForConfirms();
  }
}
