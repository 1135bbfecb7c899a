import { describe, expect, it } from '@jest/globals';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { matchesFilter, narrowsSelection, parseDeadLetterFilter, parseTime } from './dead-letter-filter';
import type { DeadLetter } from 'nestjs-reliable-messaging/operations';

const NOW = Date.parse('2026-05-01T12:00:00Z');

const deadLetter: DeadLetter = {
  deadLetterQueue: 'billing.dlq',
  queue: 'billing',
  messageId: 'm-1',
  type: 'order.placed',
  reason: 'attempts-exhausted',
  errorClass: 'PaymentDeclined',
  errorMessage: 'Card Declined by issuer',
  deadLetterCount: 1,
  deadLetteredAt: new Date('2026-05-01T11:00:00Z'),
  body: Buffer.from('{"orderId":"o-77","total":12}'),
  headers: {},
  properties: {} as DeadLetter['properties'],
};

describe('dead-letter filters', () => {
  it.each([
    [{}, true],
    [{ messageIds: ['m-1', 'm-2'] }, true],
    [{ messageIds: ['m-2'] }, false],
    [{ errorClass: 'PaymentDeclined' }, true],
    [{ errorClass: 'Payment' }, false],
    [{ type: 'order.placed', reason: 'attempts-exhausted' }, true],
    [{ reason: 'non-retryable' }, false],
    [{ since: new Date('2026-05-01T11:00:00Z') }, true],
    [{ since: new Date('2026-05-01T11:00:01Z') }, false],
    [{ until: new Date('2026-05-01T11:00:00Z') }, false],
    [{ until: new Date('2026-05-01T11:00:01Z') }, true],
    [{ text: 'o-77' }, true],
    [{ text: 'card declined' }, true],
    [{ text: 'o-78' }, false],
  ])('%j matches: %s', (filter, expected) => {
    expect(matchesFilter(deadLetter, filter)).toBe(expected);
  });

  it('reads times as ISO 8601 or as an age before now', () => {
    expect(parseTime('since', '2h', NOW).toISOString()).toBe('2026-05-01T10:00:00.000Z');
    expect(parseTime('since', '7d', NOW).toISOString()).toBe('2026-04-24T12:00:00.000Z');
    expect(parseTime('until', '2026-04-30T08:00:00Z', NOW).toISOString()).toBe('2026-04-30T08:00:00.000Z');
  });

  it.each([
    [{ since: 'yesterday' }, "'since' must be an ISO 8601 time"],
    [{ until: '12' }, "'until' must be an ISO 8601 time"],
    [{ since: '1h', until: '2h' }, "'since' must be earlier than 'until'"],
    [{ messageIds: [] }, "'messageIds' must be a list"],
    [{ messageIds: [42] }, "'messageIds' must be a list"],
    [{ text: 'x'.repeat(300) }, "'text' must be a string of at most 256 characters"],
    [{ queue: { $ne: 1 } }, "'queue' must be a string"],
  ])('refuses %j with a message saying what to write', (input, message) => {
    expect(() => parseDeadLetterFilter(input, NOW)).toThrow(InvalidDeadLetterQueryError);
    expect(() => parseDeadLetterFilter(input, NOW)).toThrow(message);
  });

  it('drops empty fields, and counts the queue alone as no selection', () => {
    const filter = parseDeadLetterFilter({ queue: 'billing', type: '', text: undefined }, NOW);
    expect(filter).toEqual({ queue: 'billing' });
    expect(narrowsSelection(filter)).toBe(false);
    expect(narrowsSelection({ queue: 'billing', errorClass: 'X' })).toBe(true);
  });
});
