import { describe, expect, it } from '@jest/globals';
import { consumerTimeoutArguments, supportsConsumerTimeoutArgument } from './consumer-timeout';

describe('consumerTimeoutArguments', () => {
  it.each([
    ['3.10.8', false],
    ['3.11.28', false],
    ['3.12.0', true],
    ['3.13.7', true],
    ['4.0.5', true],
    ['4.3.0-rc.1', true],
    [Buffer.from('4.1.2'), true],
    ['', false],
    [undefined, false],
    ['unknown', false],
  ])('for a broker of version %p sets x-consumer-timeout: %p', (version, supported) => {
    expect(supportsConsumerTimeoutArgument(version)).toBe(supported);
    expect(consumerTimeoutArguments(version, 120_000)).toEqual(
      supported ? { 'x-consumer-timeout': 120_000 } : {},
    );
  });
});
