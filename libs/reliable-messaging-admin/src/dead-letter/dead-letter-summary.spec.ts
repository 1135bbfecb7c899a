import { describe, expect, it } from '@jest/globals';
import type { MessageProperties } from 'amqplib';
import { readDeadLetter } from 'nestjs-reliable-messaging/operations';
import { headerBytes, summarizeDeadLetter } from './dead-letter-summary';
import { describeDeadLetter } from './dead-letter-view';

describe('summarizeDeadLetter', () => {
  it('keeps the headers and the size of the body, not the body', () => {
    const body = Buffer.alloc(1024, 'x');
    const properties = { messageId: 'm-1', headers: { 'rm-dead-letter-reason': 'payload-too-large' } };
    const deadLetter = readDeadLetter(
      { content: body, properties: properties as unknown as MessageProperties },
      'uploads.dlq',
    );

    const summary = summarizeDeadLetter(deadLetter);

    expect(summary).not.toHaveProperty('body');
    expect(summary).toMatchObject({ messageId: 'm-1', reason: 'payload-too-large', bodyBytes: 1024 });
    expect(describeDeadLetter(summary)).toMatchObject({ messageId: 'm-1', bodyBytes: 1024 });
    expect(describeDeadLetter(summary)).not.toHaveProperty('body');
  });
});

describe('headerBytes', () => {
  it.each([
    ['a string by its length', 'abc', 3],
    ['a Buffer by its length', Buffer.alloc(10), 10],
    ['a number as 8', 42, 8],
    ['a table by its keys and values', { ab: 'xyz', n: 1 }, 8 + 2 + 3 + 1 + 8],
    ['an array by its items', ['a', 'bc'], 8 + 1 + 2],
    ['no headers as 8', undefined, 8],
  ])('counts %s', (_what, value, expected) => {
    expect(headerBytes(value)).toBe(expected);
  });
});
