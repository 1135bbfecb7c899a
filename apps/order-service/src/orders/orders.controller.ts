import { Body, Controller, Get, HttpCode, HttpStatus, NotFoundException, Param, Post } from '@nestjs/common';
import { Idempotent } from 'nestjs-reliable-messaging/http';
import { PlaceOrderDto } from './dto/place-order.dto';
import { toOrderView, type OrderStats, type OrderView } from './order-view';
import { OrdersService } from './orders.service';

/** The order service's HTTP API. Bodies are validated by the app's ValidationPipe; a bad one gets a 400 naming the field. */
@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  /**
   * Places an order: 201 with the order (status `placed`); its saga drives payment, shipping and the receipt by
   * message.
   * With an `Idempotency-Key` header, a retry gets the first 201 again instead of a second order.
   */
  @Post()
  @HttpCode(HttpStatus.CREATED)
  @Idempotent()
  async place(@Body() body: PlaceOrderDto): Promise<OrderView> {
    return toOrderView(await this.orders.placeOrder(body));
  }

  /** Counts of orders by status and of receipts sent. */
  @Get('stats')
  async stats(): Promise<OrderStats> {
    return this.orders.stats();
  }

  /** The order with its saga's state, or 404. */
  @Get(':id')
  async get(@Param('id') id: string): Promise<OrderView> {
    const found = await this.orders.findById(id);
    if (!found) throw new NotFoundException(`order '${id.slice(0, 64)}' not found`);
    return toOrderView(found.order, found.saga);
  }
}
