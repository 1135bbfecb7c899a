import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Test, type TestingModule } from '@nestjs/testing';
import { MessagingHarness, ReliableMessagingTestingModule } from 'nestjs-reliable-messaging/testing';
import { GreetingSent } from '../src/greeting.js';
import { GREETINGS_QUEUE, GreetingHandler } from '../src/greeting.handler.js';

const greeting = (id: string, text: string) => Object.assign(new GreetingSent(), { id, text });

describe('GreetingHandler (ESM Jest, in memory)', () => {
  let moduleRef: TestingModule;
  let harness: MessagingHarness;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReliableMessagingTestingModule.forRoot()],
      providers: [GreetingHandler],
    }).compile();
    await moduleRef.init();
    harness = moduleRef.get(MessagingHarness);
  });

  afterAll(() => moduleRef.close());

  it('acks a greeting and records it once, a duplicate included', async () => {
    expect(await harness.deliver(GREETINGS_QUEUE, greeting('g-1', 'hi'))).toEqual({ kind: 'acked' });
    expect((await harness.deliver(GREETINGS_QUEUE, greeting('g-1', 'hi'))).kind).toBe('duplicate');
    expect(moduleRef.get(GreetingHandler).received).toEqual([{ id: 'g-1', text: 'hi', attempt: 1 }]);
  });

  it('dead-letters a greeting whose text is not a string', async () => {
    const outcome = await harness.deliver(GREETINGS_QUEUE, greeting('g-2', 42 as unknown as string));
    expect(outcome.kind).toBe('dead-lettered');
  });
});
