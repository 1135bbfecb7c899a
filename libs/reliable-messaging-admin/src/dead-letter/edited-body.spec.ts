import { describe, expect, it } from '@jest/globals';
import { HEADERS } from 'nestjs-reliable-messaging';
import type { DeadLetter } from 'nestjs-reliable-messaging/operations';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { checkEditedBody } from './edited-body';

const LIMIT = 1024;

/** A JSON dead letter whose `note` property was kept in the claim-check store. */
const NOTE_CLAIM_CHECKED = {
  contentType: 'application/json',
  body: Buffer.from('{"orderId":"o-1"}'),
  headers: { [HEADERS.claimCheck]: 'postgres:x', [HEADERS.claimCheckField]: 'note' },
} as unknown as DeadLetter;

describe('checkEditedBody', () => {
  it.each([
    ['a body without the claim-checked property', '{"orderId":"o-1"}'],
    ['a body that is not an object', '"o-1"'],
  ])('refuses, for a dead letter whose property was claim-checked, %s', (_case, body) => {
    const edit = () => checkEditedBody(NOTE_CLAIM_CHECKED, Buffer.from(body), LIMIT);
    expect(edit).toThrow(InvalidDeadLetterQueryError);
    expect(edit).toThrow("the dead letter's 'note' is kept in the claim-check store");
  });

  it('accepts the whole message, the claim-checked property included', () => {
    expect(() =>
      checkEditedBody(NOTE_CLAIM_CHECKED, Buffer.from('{"orderId":"o-1","note":"shorter"}'), LIMIT),
    ).not.toThrow();
  });

  it('accepts any JSON body for a dead letter without a claim-checked property', () => {
    const plain = { ...NOTE_CLAIM_CHECKED, headers: {} };
    expect(() => checkEditedBody(plain, Buffer.from('{"orderId":"o-1"}'), LIMIT)).not.toThrow();
  });
});
