import { describe, expect, it } from '@jest/globals';
import { EventPattern, MessagePattern } from '@nestjs/microservices';
import { ConfigurationError } from '../errors/configuration.error';
import { eventPatternConsumer } from './event-pattern-consumers';
import { RELIABLE_MESSAGING_TRANSPORT } from './reliable-messaging.transport';

const OTHER_TRANSPORT = Symbol('other');

class Shipping {
  @EventPattern<unknown>('parcel.weighed')
  onWeighed(): void {}

  @EventPattern<unknown>('parcel.lost', { queue: 'shipping.lost', retry: { maxAttempts: 2 } })
  onLost(): void {}

  @EventPattern<unknown>('parcel.found', RELIABLE_MESSAGING_TRANSPORT)
  onFound(): void {}

  @EventPattern<unknown>('parcel.elsewhere', OTHER_TRANSPORT)
  onElsewhere(): void {}

  @EventPattern<unknown>(['parcel.a', 'parcel.b'])
  onTwo(): void {}

  @EventPattern<unknown>(['parcel.a', 'parcel.b'], { queue: 'shipping.ab' })
  onTwoNamed(): void {}

  @EventPattern<unknown>({ cmd: 'weigh' })
  onObject(): void {}

  @MessagePattern('parcel.weight')
  weight(): number {
    return 1;
  }

  plain(): void {}
}

const shipping = new Shipping();
const context = { transportId: RELIABLE_MESSAGING_TRANSPORT, appId: 'shipping' };

function consumerOf(methodName: keyof Shipping) {
  const method = Object.getOwnPropertyDescriptor(Shipping.prototype, methodName)?.value as object;
  return eventPatternConsumer(shipping, methodName, method, undefined, context);
}

describe('eventPatternConsumer', () => {
  it.each([
    ['onWeighed', { queue: 'shipping.parcel.weighed', messageTypes: ['parcel.weighed'] }],
    ['onLost', { queue: 'shipping.lost', messageTypes: ['parcel.lost'], retry: { maxAttempts: 2 } }],
    ['onFound', { queue: 'shipping.parcel.found', messageTypes: ['parcel.found'] }],
    ['onTwoNamed', { queue: 'shipping.ab', messageTypes: ['parcel.a', 'parcel.b'] }],
  ] as const)('plans %s with the options %j, in the rpc context', (methodName, options) => {
    expect(consumerOf(methodName)).toEqual({
      instance: shipping,
      methodName,
      options,
      payloadParameterType: undefined,
      decorator: '@EventPattern',
      contextType: 'rpc',
    });
  });

  it('plans a @MessagePattern as a reply consumer', () => {
    expect(consumerOf('weight')).toEqual({
      instance: shipping,
      methodName: 'weight',
      options: { queue: 'shipping.parcel.weight', messageTypes: ['parcel.weight'], reply: true },
      payloadParameterType: undefined,
      decorator: '@MessagePattern',
      contextType: 'rpc',
    });
  });

  it.each(['onElsewhere', 'plain'] as const)(
    'leaves %s alone: another transport, or no pattern',
    (methodName) => {
      expect(consumerOf(methodName)).toBeUndefined();
    },
  );

  it.each([
    [
      'onTwo',
      "@EventPattern on Shipping.onTwo: more than one pattern shares one queue; name it, e.g. @EventPattern([...], { queue: 'shipping.onTwo' })",
    ],
    [
      'onObject',
      '@EventPattern on Shipping.onObject: ReliableMessagingTransport needs string patterns (message types), got [{"cmd":"weigh"}]',
    ],
  ] as const)('refuses %s at startup', (methodName, message) => {
    expect(() => consumerOf(methodName)).toThrow(new ConfigurationError(message));
  });
});
