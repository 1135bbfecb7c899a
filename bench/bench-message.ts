import { randomUUID } from 'node:crypto';
import type { Options } from 'amqplib';
import { IsInt, IsISO8601, IsString, Length, Min } from 'class-validator';
import { HEADERS, MessageType } from 'nestjs-reliable-messaging';

/** The message every benchmark sends: a small, realistic event validated with five rules. */
@MessageType({
  type: 'bench.order-placed',
  version: '1.0',
  idempotencyKey: (m: BenchOrderPlaced) => m.orderId,
})
export class BenchOrderPlaced {
  @IsString() orderId!: string;
  @IsString() customerId!: string;
  @IsInt() @Min(0) totalCents!: number;
  @IsString() @Length(3, 3) currency!: string;
  @IsISO8601() placedAt!: string;
}

/** The n-th benchmark message. */
export function benchMessage(n: number): BenchOrderPlaced {
  return Object.assign(new BenchOrderPlaced(), {
    orderId: `order-${n}`,
    customerId: `customer-${n % 97}`,
    totalCents: 1000 + n,
    currency: 'EUR',
    placedAt: '2026-01-02T03:04:05.678Z',
  });
}

/** How a message was shaped for the broker: its body and the properties a raw amqplib client publishes it with. */
export type BenchEnvelope = (n: number) => { body: Buffer; properties: Options.Publish };

/**
 * The n-th message as a raw amqplib client sends it with the same envelope the module writes (docs/envelope.md):
 * the same body and the same properties and headers, built per message like the module builds them; `message`
 * replaces the n-th benchmark message (to give it another order id, say).
 */
export function rawEnvelope(
  n: number,
  message: BenchOrderPlaced = benchMessage(n),
): { body: Buffer; properties: Options.Publish } {
  const messageId = randomUUID();
  return {
    body: Buffer.from(JSON.stringify(message)),
    properties: {
      messageId,
      type: 'bench.order-placed',
      contentType: 'application/json',
      appId: 'bench-raw',
      timestamp: Math.floor(Date.now() / 1000),
      persistent: true,
      headers: {
        [HEADERS.idempotencyKey]: message.orderId,
        [HEADERS.schemaVersion]: '1.0',
        [HEADERS.occurredAt]: new Date().toISOString(),
        [HEADERS.orderingKey]: messageId,
      },
    },
  };
}
