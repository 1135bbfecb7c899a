import { describe, expect, it } from '@jest/globals';
import { NonRetryableError } from '../errors/non-retryable.error';
import { RemoteHandlerError } from '../errors/remote-handler.error';
import { buildReply, readReply, REPLY_STATUS_HEADER } from './reply-message';

const ORIGIN = { replyTo: 'amq.rabbitmq.reply-to.abc', messageId: 'req-1', type: 'price.quote' };

function roundTrip(outcome: Parameters<typeof buildReply>[1]) {
  const reply = buildReply(ORIGIN, outcome, 'pricing');
  return {
    reply,
    read: readReply({ content: reply.body, properties: reply.properties as never }, 'price.quote'),
  };
}

describe('buildReply and readReply', () => {
  it('address the reply to the caller on the default exchange, correlated by the request id', () => {
    const { reply } = roundTrip({ ok: true, value: 1 });

    expect(reply).toMatchObject({
      exchange: '',
      routingKey: 'amq.rabbitmq.reply-to.abc',
      properties: {
        correlationId: 'req-1',
        type: 'price.quote.reply',
        appId: 'pricing',
        contentType: 'application/json',
        headers: { [REPLY_STATUS_HEADER]: 'ok' },
      },
    });
  });

  it.each([
    ['an object', { totalCents: 750 }, { totalCents: 750 }],
    ['a string', 'ok', 'ok'],
    ['nothing, as null', undefined, null],
  ])('carry %s as the value', (_case, value, expected) => {
    expect(roundTrip({ ok: true, value }).read).toEqual({ ok: true, value: expected });
  });

  it("turn a handler's error into RemoteHandlerError with its name and message, never its stack", () => {
    const { reply, read } = roundTrip({ ok: false, error: new NonRetryableError('no price for sku x') });

    expect(JSON.parse(reply.body.toString())).toEqual({
      name: 'NonRetryableError',
      message: 'no price for sku x',
    });
    expect(read).toEqual({
      ok: false,
      error: new RemoteHandlerError('price.quote', 'NonRetryableError', 'no price for sku x'),
    });
    expect((read as { error: RemoteHandlerError }).error).toMatchObject({
      remoteName: 'NonRetryableError',
      remoteMessage: 'no price for sku x',
    });
  });

  it("send a handler's error without the credentials its message quotes", () => {
    const { reply } = roundTrip({
      ok: false,
      error: new TypeError('fetch failed for https://user:s3cret@prices.example.com/quote?token=s3cret'),
    });

    expect(JSON.parse(reply.body.toString())).toEqual({
      name: 'TypeError',
      message: 'fetch failed for https://***@prices.example.com/quote?token=***',
    });
  });

  it('answer a value JSON cannot encode with an error saying so', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;

    const { read } = roundTrip({ ok: true, value: cycle });

    expect(read.ok).toBe(false);
    expect((read as { error: RemoteHandlerError }).error.remoteName).toBe('TypeError');
    expect((read as { error: RemoteHandlerError }).error.remoteMessage).toMatch(
      /^the reply cannot be encoded as JSON/,
    );
  });

  it('read the status header as the broker may hand it back, a Buffer', () => {
    const reply = buildReply(ORIGIN, { ok: false, error: new Error('boom') });
    const read = readReply(
      {
        content: reply.body,
        properties: { headers: { [REPLY_STATUS_HEADER]: Buffer.from('error') } } as never,
      },
      'price.quote',
    );
    expect(read.ok).toBe(false);
  });
});
