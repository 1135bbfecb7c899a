import { describe, expect, it } from '@jest/globals';
import { DEAD_LETTER_HEADERS } from '../reliable-messaging.constants';
import { readDeadLetter } from './dead-letter-record';

describe('readDeadLetter', () => {
  it('shows the error of a dead letter written before scrubbing without the credentials it quotes', () => {
    const deadLetter = readDeadLetter(
      {
        content: Buffer.from('{}'),
        properties: {
          headers: {
            [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
            [DEAD_LETTER_HEADERS.errorMessage]: 'fetch https://user:s3cret@receipts.example.com failed',
            [DEAD_LETTER_HEADERS.errorStack]:
              'TypeError: amqp://guest:s3cret@rabbit\n    at send (receipts.js:1:1)',
          },
        } as never,
      },
      'orders.dlq',
    );

    expect(deadLetter.errorMessage).toBe('fetch https://***@receipts.example.com failed');
    expect(deadLetter.errorStack).toBe('TypeError: amqp://***@rabbit\n    at send (receipts.js:1:1)');
  });
});
