import { describe, expect, it } from '@jest/globals';
import { ConfigurationError } from '../errors/configuration.error';
import type { OutboundMessage } from '../envelope/envelope';
import { assertBodiesOutlive, dueTime, scheduledDelivery, type ScheduleOptions } from './scheduled-delivery';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('scheduledDelivery', () => {
  it.each<[string, ScheduleOptions, ReturnType<typeof scheduledDelivery>]>([
    ['no schedule', {}, undefined],
    ['a moment ahead', { deliverAt: new Date(NOW + 1500) }, { at: new Date(NOW + 1500) }],
    ['a moment now', { deliverAt: new Date(NOW) }, undefined],
    ['a moment past', { deliverAt: new Date(NOW - 60_000) }, undefined],
    ['a delay', { delayMs: 1500 }, { afterMs: 1500 }],
    ['a fractional delay', { delayMs: 0.5 }, { afterMs: 0.5 }],
    ['a delay of 0', { delayMs: 0 }, undefined],
  ])('reads %s', (_, options, expected) => {
    expect(scheduledDelivery('shop.reminder', options, NOW)).toEqual(expected);
  });

  it.each<[string, ScheduleOptions, RegExp]>([
    [
      'both a moment and a delay',
      { deliverAt: new Date(NOW + 1), delayMs: 1 },
      /deliverAt or delayMs, not both/,
    ],
    ['a negative delay', { delayMs: -1 }, /delayMs must be a finite number .* got -1/],
    ['a delay of NaN', { delayMs: Number.NaN }, /delayMs must be a finite number .* got NaN/],
    ['an infinite delay', { delayMs: Number.POSITIVE_INFINITY }, /got Infinity/],
    ['a delay given as a string', { delayMs: '1000' }, /got the string '1000'/],
    ['a delay past what a Date holds', { delayMs: 8.64e15 }, /beyond the latest time a Date can hold/],
    [
      'an Invalid Date',
      { deliverAt: new Date(Number.NaN) },
      /deliverAt must be a valid Date, got an Invalid Date/,
    ],
    [
      'a moment given as a string',
      { deliverAt: '2026-01-02T00:00:00Z' },
      /deliverAt must be a valid Date, got the string/,
    ],
    ['a moment given as a number', { deliverAt: NOW + 1000 }, /deliverAt must be a valid Date, got \d+/],
  ])('refuses %s with a ConfigurationError naming the message type', (_, options, message) => {
    const read = () => scheduledDelivery('shop.reminder', options, NOW);
    expect(read).toThrow(ConfigurationError);
    expect(read).toThrow(/^publish\(\) of 'shop.reminder'/);
    expect(read).toThrow(message);
  });

  it("copies the caller's Date, so changing it later does not move the message", () => {
    const deliverAt = new Date(NOW + 5000);
    const delivery = scheduledDelivery('shop.reminder', { deliverAt }, NOW);
    deliverAt.setTime(NOW + 999_999);
    expect(delivery?.at?.getTime()).toBe(NOW + 5000);
  });

  it('tells when a delivery falls by the app clock', () => {
    expect(dueTime({ at: new Date(NOW + 10) }, NOW)).toBe(NOW + 10);
    expect(dueTime({ afterMs: 250 }, NOW)).toBe(NOW + 250);
  });
});

describe('assertBodiesOutlive', () => {
  const message = (expiresAt?: number): OutboundMessage => ({
    exchange: 'events',
    routingKey: 'order.placed',
    body: Buffer.alloc(0),
    properties: { messageId: 'm', type: 'order.placed', headers: {} },
    claimCheck:
      expiresAt === undefined
        ? undefined
        : {
            location: 'x',
            body: Buffer.alloc(0),
            info: { id: 'x', expiresAt: new Date(expiresAt), messageType: 'order.placed' },
          },
  });

  it('lets through messages without a claim check, or whose body outlives the due time', () => {
    expect(() => assertBodiesOutlive([message(), message(NOW + 1000)], NOW + 1000)).not.toThrow();
  });

  it('refuses a claim-checked message whose body expires before it is due, naming the option to raise', () => {
    expect(() => assertBodiesOutlive([message(), message(NOW + 999)], NOW + 1000)).toThrow(
      ConfigurationError,
    );
    expect(() => assertBodiesOutlive([message(NOW + 999)], NOW + 1000)).toThrow(/claimCheck\.timeToLiveMs/);
  });
});
