import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Consume, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { ConsumerRegistry } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'parcel.shipped', idempotencyKey: (m: ParcelShipped) => m.parcelId })
class ParcelShipped {
  @IsString() parcelId!: string;
}

const SHIPPING = uniqueQueue('shipping');
const AUDIT = uniqueQueue('audit');

@Injectable()
class ShippingHandler {
  readonly parcels: string[] = [];

  @Consume({ queue: SHIPPING })
  async onShipped(event: ParcelShipped, _ctx: MessageContext): Promise<void> {
    this.parcels.push(event.parcelId);
  }
}

@Injectable()
class AuditHandler {
  readonly parcels: string[] = [];

  @Consume({ queue: AUDIT, queueType: 'classic' })
  async onShipped(event: ParcelShipped, _ctx: MessageContext): Promise<void> {
    this.parcels.push(event.parcelId);
  }
}

describe('a consumer the server cancels', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let shipping: ShippingHandler;
  let audit: AuditHandler;

  const ship = (parcelId: string) => app.publisher.publish(Object.assign(new ParcelShipped(), { parcelId }));
  const consumers = async (queue: string) =>
    (await (await broker.openChannel()).checkQueue(queue)).consumerCount;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [ShippingHandler, AuditHandler],
    });
    shipping = app.get(ShippingHandler);
    audit = app.get(AuditHandler);
    await ship('before');
    await waitFor(
      'both consumers to get the first parcel',
      () => shipping.parcels.length === 1 && audit.parcels.length === 1,
    );
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it.each([
    ['quorum', SHIPPING],
    ['classic', AUDIT],
  ])('declares a deleted %s queue again, with its bindings, and resubscribes', async (_type, queue) => {
    const handler = queue === SHIPPING ? shipping : audit;
    const before = app.logger.find('log', new RegExp(`resubscribed to ${queue.replace('.', '\\.')}`)).length;

    await (await broker.openChannel()).deleteQueue(queue);

    await waitFor('the consumer to resubscribe', async () => {
      const logged = app.logger.find(
        'log',
        new RegExp(`resubscribed to ${queue.replace('.', '\\.')}`),
      ).length;
      return logged > before && (await consumers(queue)) === 1;
    });
    expect(app.logger.find('warn', /the broker cancelled the subscription/).length).toBeGreaterThan(0);
    const id = `after-delete-${queue}`;
    await ship(id);
    await waitFor('the parcel published after the delete', () => handler.parcels.includes(id));
  });

  // NOTE: a classic queue here. On RabbitMQ 3.10, a quorum queue deleted and declared again at once keeps the old
  // subscription registered without cancelling it: the broker sends no basic.cancel and delivers nothing to it.
  it('resubscribes when another client deletes the queue and declares it again at once', async () => {
    const channel = await broker.openChannel();
    const moduleArguments = app
      .get(ConsumerRegistry)
      .consumers.find((c) => c.queue === AUDIT)!.queueArguments;

    await channel.deleteQueue(AUDIT);
    await channel.assertQueue(AUDIT, { durable: true, arguments: moduleArguments });

    await waitFor('one consumer on the queue again', async () => (await consumers(AUDIT)) === 1);
    await ship('after-redeclare');
    await waitFor('the parcel published after the redeclare', () =>
      audit.parcels.includes('after-redeclare'),
    );
  });

  it('keeps the other consumer running throughout', async () => {
    await ship('last');
    await waitFor(
      'both consumers to get the last parcel',
      () => shipping.parcels.includes('last') && audit.parcels.includes('last'),
    );
    expect(app.get(ConsumerRegistry).statuses.map((status) => status.consuming)).toEqual([true, true]);
    expect(shipping.parcels.filter((id) => id === 'last')).toHaveLength(1);
    expect(app.logger.find('error', /./)).toEqual([]);
  });
});
