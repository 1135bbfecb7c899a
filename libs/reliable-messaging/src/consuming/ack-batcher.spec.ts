import { describe, expect, it } from '@jest/globals';
import type { Channel, ConsumeMessage } from 'amqplib';
import { AckBatcher } from './ack-batcher';

type Sent = ['ack', number, boolean] | ['nack', number, boolean];

function setup(): { batcher: AckBatcher; sent: Sent[]; message: (tag: number) => ConsumeMessage } {
  const sent: Sent[] = [];
  const channel = {
    ack: (m: ConsumeMessage, multiple = false) => sent.push(['ack', m.fields.deliveryTag, multiple]),
    nack: (m: ConsumeMessage, _all: boolean, requeue: boolean) =>
      sent.push(['nack', m.fields.deliveryTag, requeue]),
  } as unknown as Channel;
  const message = (tag: number) => ({ fields: { deliveryTag: tag } }) as ConsumeMessage;
  return { batcher: new AckBatcher(channel), sent, message };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('AckBatcher', () => {
  it('sends the acks of one turn as a single multiple ack when no earlier delivery is unsettled', async () => {
    const { batcher, sent, message } = setup();
    for (const tag of [1, 2, 3]) batcher.track(message(tag));
    batcher.ack(message(2));
    batcher.ack(message(1));
    batcher.ack(message(3));
    expect(sent).toEqual([]);
    await nextTurn();
    expect(sent).toEqual([['ack', 3, true]]);
  });

  it('never covers an unsettled delivery: acks after it go one by one', async () => {
    const { batcher, sent, message } = setup();
    for (const tag of [1, 2, 3, 4]) batcher.track(message(tag));
    batcher.ack(message(1));
    batcher.ack(message(3));
    batcher.ack(message(4));
    await nextTurn();
    expect(sent).toEqual([
      ['ack', 1, false],
      ['ack', 3, false],
      ['ack', 4, false],
    ]);
    batcher.ack(message(2));
    await nextTurn();
    expect(sent.at(-1)).toEqual(['ack', 2, false]);
  });

  it('sends nacks at once, and a nacked delivery no longer holds back later acks', async () => {
    const { batcher, sent, message } = setup();
    for (const tag of [1, 2, 3]) batcher.track(message(tag));
    batcher.nack(message(1), true);
    expect(sent).toEqual([['nack', 1, true]]);
    batcher.ack(message(2));
    batcher.ack(message(3));
    await nextTurn();
    expect(sent).toEqual([
      ['nack', 1, true],
      ['ack', 3, true],
    ]);
  });

  it('flush() sends waiting acks at once, so they precede a channel close', () => {
    const { batcher, sent, message } = setup();
    batcher.track(message(1));
    batcher.ack(message(1));
    batcher.flush();
    expect(sent).toEqual([['ack', 1, false]]);
  });
});
