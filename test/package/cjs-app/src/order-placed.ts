import { IsInt, IsString, Min } from 'class-validator';
import { MessageType } from 'nestjs-reliable-messaging';

@MessageType({ type: 'order.placed', idempotencyKey: (m: OrderPlaced) => `order-placed:${m.orderId}` })
export class OrderPlaced {
  @IsString() orderId!: string;
  @IsInt() @Min(0) totalCents!: number;
}
