import { describe, expect, it } from '@jest/globals';
import type { DeadLetter } from 'nestjs-reliable-messaging/operations';
import { applyJsonEdits } from './json-edits';

const withBody = (body: string) => ({ body: Buffer.from(body) }) as DeadLetter;

describe('applyJsonEdits', () => {
  it('sets numbers, strings, nulls and nested fields', () => {
    const edited = applyJsonEdits(withBody('{"quantity":-1,"address":{"zip":"7500"},"note":"x"}'), [
      'quantity=2',
      'address.zip="75001"',
      'address.city=Paris',
      'note=null',
      'gift.wrap=true',
    ]);
    expect(JSON.parse(edited.toString())).toEqual({
      quantity: 2,
      address: { zip: '75001', city: 'Paris' },
      note: null,
      gift: { wrap: true },
    });
  });

  it.each([
    ['a body that is not a JSON object', '[1,2]', ['a=1'], 'this body is not one'],
    ['an edit without =', '{}', ['quantity'], "takes path=value, got 'quantity'"],
    ['a prototype key', '{}', ['__proto__.polluted=1'], 'is not a usable path'],
    ['an empty path segment', '{}', ['a..b=1'], 'is not a usable path'],
  ])('refuses %s', (_what, body, edits, message) => {
    expect(() => applyJsonEdits(withBody(body), edits)).toThrow(message);
  });
});
