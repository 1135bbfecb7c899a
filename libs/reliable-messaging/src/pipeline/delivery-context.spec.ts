import { describe, expect, it } from '@jest/globals';
import type { ConsumeMessage } from 'amqplib';
import type { Envelope } from '../envelope/envelope';
import { ManualSettlementError } from '../errors/manual-settlement.error';
import { NonRetryableError } from '../errors/non-retryable.error';
import { AttemptAbort } from './attempt-abort';
import { DeliveryContext } from './delivery-context';

const RAW = {
  fields: { redelivered: false },
  properties: {},
  content: Buffer.from('{}'),
} as unknown as ConsumeMessage;
const ENVELOPE = { type: 'invoice.issued' } as Envelope;

function context(): DeliveryContext {
  return new DeliveryContext(
    ENVELOPE,
    1,
    'billing.invoice-issued',
    'Billing.onIssued',
    RAW,
    undefined,
    new AttemptAbort(),
    {},
  );
}

describe("DeliveryContext, read as Nest's RmqContext", () => {
  it('answers getMessage() with the raw delivery, getPattern() with the message type, getArgs() with both and the channel', () => {
    const ctx = context();
    expect(ctx.getMessage()).toBe(RAW);
    expect(ctx.getPattern()).toBe('invoice.issued');
    expect(ctx.getArgs()[0]).toBe(RAW);
    expect(ctx.getArgByIndex(2)).toBe('invoice.issued');
  });

  it.each(['ack', 'nack', 'reject', 'ackAll', 'nackAll'] as const)(
    'refuses getChannelRef().%s() with a non-retryable ManualSettlementError naming the handler',
    (call) => {
      const settle = context().getChannelRef()[call];
      let thrown: unknown;
      try {
        settle(RAW);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ManualSettlementError);
      expect(thrown).toBeInstanceOf(NonRetryableError);
      expect((thrown as ManualSettlementError).reason).toBe('manual-settlement');
      expect((thrown as Error).message).toBe(
        `Billing.onIssued called channel.${call}() itself: the module acks after your handler returns, and retries ` +
          `or dead-letters when it throws; remove the ${call} call`,
      );
    },
  );
});
