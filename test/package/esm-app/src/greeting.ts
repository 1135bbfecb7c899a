import { IsString } from 'class-validator';
import { MessageType } from 'nestjs-reliable-messaging';

@MessageType({ type: 'greeting.sent', idempotencyKey: (m: GreetingSent) => `greeting:${m.id}` })
export class GreetingSent {
  @IsString() id!: string;
  @IsString() text!: string;
}
