import { describe, expect, it } from '@jest/globals';
import { ConfigurationError } from '../errors/configuration.error';
import { assertKnownKeys, optionKeys } from './known-keys';

interface Sample {
  batchSize?: number;
  retryDelay?: { initialMs?: number };
}

const KEYS = optionKeys<Sample>({ batchSize: true, retryDelay: true });

function failure(value: object, path?: string): string {
  try {
    assertKnownKeys(value, KEYS, 'SampleModule', path);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as Error).message;
  }
  throw new Error('the keys were accepted');
}

describe('optionKeys', () => {
  it("lists the type's keys", () => {
    expect(KEYS).toEqual(['batchSize', 'retryDelay']);
  });
});

describe('assertKnownKeys', () => {
  it('accepts known keys, and no keys at all', () => {
    expect(() => assertKnownKeys({ batchSize: 1, retryDelay: {} }, KEYS, 'SampleModule')).not.toThrow();
    expect(() => assertKnownKeys({}, KEYS, 'SampleModule')).not.toThrow();
  });

  it.each([
    [
      'a misspelt key names the nearest known one',
      { batchSise: 1 },
      undefined,
      'SampleModule: unknown option `batchSise`; did you mean `batchSize`?',
    ],
    [
      'a misspelt key holding undefined is refused too',
      { batchSise: undefined },
      undefined,
      'SampleModule: unknown option `batchSise`; did you mean `batchSize`?',
    ],
    [
      'a nested key is named with its path',
      { retryDeley: {} },
      'outbox.',
      'SampleModule: unknown option `outbox.retryDeley`; did you mean `outbox.retryDelay`?',
    ],
    [
      'a key near none lists the known ones',
      { concurrency: 2 },
      undefined,
      'SampleModule: unknown option `concurrency`; the options here are `batchSize`, `retryDelay`',
    ],
  ])('%s', (_case, value, path, message) => {
    expect(failure(value, path)).toBe(message);
  });
});
