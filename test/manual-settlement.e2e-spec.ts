import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import type { Channel, Message } from 'amqplib';
import { Ctx, Payload, type RmqContext } from '@nestjs/microservices';
import { IsString } from 'class-validator';
import { ConfigurationError, Consume, MessageType, type ConsumeOptions } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'invoice.issued', idempotencyKey: (m: InvoiceIssued) => `invoice:${m.id}` })
class InvoiceIssued {
  @IsString() id!: string;
}

const RETRIED_QUEUE = uniqueQueue('manual-settlement');
const REFUSED_QUEUE = uniqueQueue('manual-settlement-refused');
const MISSPELT_QUEUE = uniqueQueue('manual-settlement-misspelt');
/** Enough attempts that a retried failure could not pass for one dead-lettered at once. */
const MAX_ATTEMPTS = 4;

/** A handler straight from Nest's RMQ transport: it acks by hand, in its own body. */
@Injectable()
class AcksInItsBody {
  @Consume({ queue: REFUSED_QUEUE })
  async onIssued(@Payload() _invoice: InvoiceIssued, @Ctx() ctx: RmqContext): Promise<void> {
    (ctx.getChannelRef() as Channel).ack(ctx.getMessage() as Message);
  }
}

/** Acks through a helper, out of the startup check's sight: the call itself must be refused when it runs. */
function acknowledge(ctx: RmqContext): void {
  const channel = ctx.getChannelRef() as Channel;
  channel.ack(ctx.getMessage() as Message);
}

@Injectable()
class AcksThroughAHelper {
  readonly attempts: Array<{ id: string; pattern: string; messageId: unknown }> = [];

  @Consume({
    queue: RETRIED_QUEUE,
    retry: { maxAttempts: MAX_ATTEMPTS, initialDelayMs: 100, maxDelayMs: 200 },
  })
  async onIssued(@Payload() invoice: InvoiceIssued, @Ctx() ctx: RmqContext): Promise<void> {
    this.attempts.push({
      id: invoice.id,
      pattern: ctx.getPattern(),
      messageId: (ctx.getMessage() as Message).properties.messageId as unknown,
    });
    acknowledge(ctx);
  }
}

@Injectable()
class MisspeltOption {
  @Consume({ queue: MISSPELT_QUEUE, concurency: 5 } as ConsumeOptions)
  async onIssued(_invoice: InvoiceIssued): Promise<void> {}
}

describe('a handler that settles its message by hand, as under Nest RMQ transport', () => {
  let broker: TestBroker;

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });

  afterAll(async () => {
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('is refused at startup when its own code calls getChannelRef().ack(), naming it and what to remove', async () => {
    const { error } = await MessagingTestApp.startFailing(broker, { providers: [AcksInItsBody] });

    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toContain(
      '@Consume on AcksInItsBody.onIssued: the handler settles its message by hand (it calls getChannelRef()); ' +
        'the module acks after your handler returns; remove the ack/nack call',
    );
  });

  it('is dead-lettered on its first attempt, reason manual-settlement, when the ack is out of sight of the startup check', async () => {
    const app = await MessagingTestApp.start(broker, { providers: [AcksThroughAHelper] });
    try {
      const handler = app.get(AcksThroughAHelper);
      const receipt = await app.publisher.publish(Object.assign(new InvoiceIssued(), { id: 'inv-1' }));

      let headers: Record<string, unknown> | undefined;
      await waitFor(`the dead letter of inv-1 in ${RETRIED_QUEUE}.dlq`, async () => {
        const [dead] = await broker.getAll(`${RETRIED_QUEUE}.dlq`);
        headers = dead?.properties.headers;
        return dead !== undefined;
      });

      expect(headers).toMatchObject({
        [DEAD_LETTER_HEADERS.reason]: 'manual-settlement',
        [DEAD_LETTER_HEADERS.errorClass]: 'ManualSettlementError',
        [DEAD_LETTER_HEADERS.handler]: 'AcksThroughAHelper.onIssued',
        [DEAD_LETTER_HEADERS.attempts]: 1,
      });
      expect(String(headers?.[DEAD_LETTER_HEADERS.errorMessage])).toContain(
        'AcksThroughAHelper.onIssued called channel.ack() itself: the module acks after your handler returns',
      );
      // The context answered as an RmqContext does before the ack was refused: the message and its pattern.
      expect(handler.attempts).toEqual([
        { id: 'inv-1', pattern: 'invoice.issued', messageId: receipt.messageId },
      ]);
    } finally {
      await app.close();
    }
  });
});

describe('a misspelt option, through the real module bootstrap', () => {
  let broker: TestBroker;

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });

  afterAll(async () => {
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('refuses to start on a misspelt @Consume() option, naming the nearest one', async () => {
    const { error } = await MessagingTestApp.startFailing(broker, { providers: [MisspeltOption] });

    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toBe(
      '@Consume on MisspeltOption.onIssued: unknown option `concurency`; did you mean `concurrency`?',
    );
  });

  it('refuses to start on a misspelt module option, naming the nearest one', async () => {
    const { error } = await MessagingTestApp.startFailing(broker, {
      options: { defaultConcurency: 5 } as object,
    });

    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toBe(
      'ReliableMessagingModule: unknown option `defaultConcurency`; did you mean `defaultConcurrency`?',
    );
  });
});
