import { describe, expect, it } from '@jest/globals';
import type { Channel, ConsumeMessage } from 'amqplib';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { NonRetryableError } from '../errors/non-retryable.error';
import { InboundDelivery } from '../pipeline/inbound-delivery';
import type { MessageHandler } from '../pipeline/message-middleware';
import type { StageDependencies } from '../pipeline/pipeline-stage';
import { RetryPolicy } from '../retry/retry-policy';
import { resolveRetryOptions } from '../options/retry.options';
import type { ReplyOutcome } from './reply-message';
import { replyStage } from './reply.middleware';

const PLAN = {
  name: 'Pricing.quote',
  reply: true,
  retry: new RetryPolicy(resolveRetryOptions({ maxAttempts: 3 })),
} as unknown as ConsumerPlan;

function setUp({ replyTo }: { replyTo?: string } = { replyTo: 'amq.rabbitmq.reply-to.abc' }) {
  const replies: Array<{ replyTo: string; outcome: ReplyOutcome }> = [];
  const deps = {
    replies: {
      reply: async (_d: unknown, to: string, outcome: ReplyOutcome) =>
        void replies.push({ replyTo: to, outcome }),
    },
  } as unknown as StageDependencies;
  const raw = {
    content: Buffer.from('{}'),
    fields: { deliveryTag: 1, redelivered: false, exchange: 'events', routingKey: 'price.quote' },
    properties: { messageId: 'req-1', replyTo, headers: {} },
  } as unknown as ConsumeMessage;
  const channel = { ack: () => undefined, nack: () => undefined } as unknown as Channel;
  const delivery = new InboundDelivery(raw, PLAN, channel);
  const stage = (next: MessageHandler) => replyStage(PLAN, deps)!(next)(delivery);
  return { replies, delivery, stage };
}

describe('replyStage', () => {
  it('is left out of a consumer that does not reply', () => {
    expect(replyStage({ ...PLAN, reply: false }, {} as StageDependencies)).toBeUndefined();
  });

  it("answers with the handler's result once everything inside has resolved", async () => {
    const { replies, delivery, stage } = setUp();

    await stage(async () => {
      delivery.handlerResult = { value: { totalCents: 750 } };
    });

    expect(replies).toEqual([
      { replyTo: 'amq.rabbitmq.reply-to.abc', outcome: { ok: true, value: { totalCents: 750 } } },
    ]);
  });

  it('answers a failure that will be dead-lettered with its error, and still fails the delivery', async () => {
    const { replies, stage } = setUp();
    const error = new NonRetryableError('no price');

    await expect(stage(() => Promise.reject(error))).rejects.toBe(error);

    expect(replies).toEqual([{ replyTo: 'amq.rabbitmq.reply-to.abc', outcome: { ok: false, error } }]);
  });

  it('answers nothing for a failure that will be retried: the retry answers', async () => {
    const { replies, stage } = setUp();

    await expect(stage(() => Promise.reject(new Error('hiccup')))).rejects.toThrow('hiccup');

    expect(replies).toEqual([]);
  });

  it('answers attempts exhausted with the last error', async () => {
    const { replies, delivery, stage } = setUp();
    delivery.attempt = 3;

    await expect(stage(() => Promise.reject(new Error('hiccup')))).rejects.toThrow('hiccup');

    expect(replies).toHaveLength(1);
  });

  it('answers nothing when the handler did not run (a duplicate) or the delivery was settled inside', async () => {
    const skipped = setUp();
    await skipped.stage(async () => undefined);
    const checkpointed = setUp();
    await checkpointed.stage(async () => {
      checkpointed.delivery.ack();
    });

    expect([...skipped.replies, ...checkpointed.replies]).toEqual([]);
  });

  it('handles a message without replyTo and answers nothing', async () => {
    const { replies, delivery, stage } = setUp({});
    let handled = false;

    await stage(async () => {
      handled = true;
      delivery.handlerResult = { value: 1 };
    });

    expect(handled).toBe(true);
    expect(replies).toEqual([]);
  });
});
