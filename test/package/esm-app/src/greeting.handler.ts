import { Injectable } from '@nestjs/common';
import { Consume, type MessageContext } from 'nestjs-reliable-messaging';
import { GreetingSent } from './greeting.js';

/** The queue's name comes from the environment, so that each run of the package test has its own. */
export const GREETINGS_QUEUE = process.env.GREETINGS_QUEUE ?? 'greetings';

@Injectable()
export class GreetingHandler {
  readonly received: { id: string; text: string; attempt: number }[] = [];

  @Consume({ queue: GREETINGS_QUEUE })
  onGreeting(greeting: GreetingSent, ctx: MessageContext): void {
    if (greeting.text.length === 0) throw new Error('an empty greeting');
    this.received.push({ id: greeting.id, text: greeting.text, attempt: ctx.attempt });
  }
}
