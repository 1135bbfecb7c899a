import { describe, expect, it } from '@jest/globals';
import { ConfigurationError } from '../errors/configuration.error';
import { assertNoManualSettlement } from './manual-settlement';

/** Handlers as a migrated service writes them; only their source is read. */
class Migrated {
  async acksThroughTheContext(
    _event: unknown,
    ctx: { getChannelRef(): { ack(m: unknown): void }; getMessage(): unknown },
  ) {
    ctx.getChannelRef().ack(ctx.getMessage());
  }
  async nacksAKeptChannel(this: { channel?: { nack(m: unknown): void } }, event: unknown) {
    this.channel?.nack(event);
  }
  async rejectsALocalChannel(event: unknown, ctx: { getArgs(): unknown[] }) {
    const [, channel] = ctx.getArgs() as [unknown, { reject(m: unknown, requeue: boolean): void }];
    channel.reject(event, false);
  }
  async rejectsThroughItsOwnSalesChannel(
    this: { salesChannel: { reject(m: unknown): void } },
    order: unknown,
  ) {
    // An object of the app's own whose name contains "channel" is not the broker's.
    this.salesChannel.reject(order);
  }
  async settlesNothing(event: { ack?: () => void }, ctx: { attempt: number }) {
    // The payload's own `ack` field, and a word like "acknowledged", are not a channel's.
    // No ctx.getChannelRef().ack() here, nor /* channel.nack(message) */: a comment that names them is not a call.
    if (ctx.attempt > 1 && event.ack) event.ack();
    return 'acknowledged by the module';
  }
}

const where = '@Consume on Migrated.handler';

function methodOf(name: string): unknown {
  return (Migrated.prototype as unknown as Record<string, unknown>)[name];
}

describe('assertNoManualSettlement', () => {
  it.each([
    ['ctx.getChannelRef().ack(ctx.getMessage())', 'acksThroughTheContext', 'getChannelRef()'],
    ['this.channel?.nack(event)', 'nacksAKeptChannel', 'channel?.nack()'],
    ['channel.reject(event, false)', 'rejectsALocalChannel', 'channel.reject()'],
  ])('refuses a handler that calls %s, naming it and what to remove', (_call, method, found) => {
    let thrown: unknown;
    try {
      assertNoManualSettlement(methodOf(method), where);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigurationError);
    expect((thrown as Error).message).toBe(
      `${where}: the handler settles its message by hand (it calls ${found}); the module acks after your handler ` +
        'returns; remove the ack/nack call and its getChannelRef() (docs/handlers.md, "Coming from Nest\'s RMQ transport")',
    );
  });

  it('accepts a handler that leaves settling to the module, and anything that is not a function', () => {
    expect(() => assertNoManualSettlement(methodOf('settlesNothing'), where)).not.toThrow();
    expect(() => assertNoManualSettlement(methodOf('rejectsThroughItsOwnSalesChannel'), where)).not.toThrow();
    expect(() => assertNoManualSettlement(undefined, where)).not.toThrow();
  });
});
