import { Test, type TestingModule } from '@nestjs/testing';
import { MessagingHarness, ReliableMessagingTestingModule } from 'nestjs-reliable-messaging/testing';
import { OrderPlaced } from '../src/order-placed';
import { SHIPPING_QUEUE, ShipmentBook, ShippingHandler } from '../src/shipping.handler';

/** The book without a database: the in-memory module has no dataSource, so no transaction either. */
class BookInMemory {
  readonly recorded: string[] = [];
  async record(order: OrderPlaced): Promise<void> {
    this.recorded.push(order.orderId);
  }
}

const order = (orderId: string, totalCents = 100) =>
  Object.assign(new OrderPlaced(), { orderId, totalCents });

describe('ShippingHandler (CommonJS Jest, in memory)', () => {
  let moduleRef: TestingModule;
  let harness: MessagingHarness;
  let book: BookInMemory;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReliableMessagingTestingModule.forRoot()],
      providers: [ShippingHandler, { provide: ShipmentBook, useClass: BookInMemory }],
    }).compile();
    await moduleRef.init();
    harness = moduleRef.get(MessagingHarness);
    book = moduleRef.get(ShipmentBook);
  });

  afterAll(() => moduleRef.close());

  it('ships an order once, however often it arrives', async () => {
    expect(await harness.deliver(SHIPPING_QUEUE, order('o-1'))).toEqual({ kind: 'acked' });
    expect((await harness.deliver(SHIPPING_QUEUE, order('o-1'))).kind).toBe('duplicate');
    expect(book.recorded).toEqual(['o-1']);
  });

  it('dead-letters an order with a negative total at once', async () => {
    expect((await harness.deliver(SHIPPING_QUEUE, order('o-2', -1))).kind).toBe('dead-lettered');
    expect(book.recorded).toEqual(['o-1']);
  });
});
