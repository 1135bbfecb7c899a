import { describe, expect, it } from '@jest/globals';
import { ConfigurationError } from '../errors/configuration.error';
import { cancelTarget } from './cancel-target';

describe('cancelTarget', () => {
  it('takes a message id, in lower case, or an idempotency key', () => {
    expect(cancelTarget({ messageId: '0192F3A4-5B6C-7D8E-9F00-112233445566' })).toEqual({
      messageId: '0192f3a4-5b6c-7d8e-9f00-112233445566',
    });
    expect(cancelTarget({ idempotencyKey: 'reminder:o-1' })).toEqual({ idempotencyKey: 'reminder:o-1' });
  });

  it.each<[string, unknown, RegExp]>([
    ['nothing', undefined, /takes \{ messageId \} or \{ idempotencyKey \}/],
    ['neither', {}, /exactly one of messageId and idempotencyKey/],
    ['both', { messageId: '0192f3a4-5b6c-7d8e-9f00-112233445566', idempotencyKey: 'k' }, /exactly one/],
    ['an id that is no UUID', { messageId: "1' OR '1'='1" }, /messageId must be a UUID/],
    ['an id that is no string', { messageId: 42 }, /messageId must be a UUID/],
    ['an empty key', { idempotencyKey: '' }, /idempotencyKey must be a string of 1 to 256 characters/],
    ['a key too long', { idempotencyKey: 'k'.repeat(257) }, /1 to 256 characters/],
  ])('refuses %s', (_, input, message) => {
    expect(() => cancelTarget(input)).toThrow(ConfigurationError);
    expect(() => cancelTarget(input)).toThrow(message);
  });
});
