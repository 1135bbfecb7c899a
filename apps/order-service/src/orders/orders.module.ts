import { Module } from '@nestjs/common';
import { OrdersController } from './orders.controller';
import { OrdersService } from './orders.service';

/** Placing and reading orders over HTTP. */
@Module({
  controllers: [OrdersController],
  providers: [OrdersService],
})
export class OrdersModule {}
