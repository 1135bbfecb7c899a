import 'reflect-metadata';
import { describe, expect, it, jest } from '@jest/globals';
import { Injectable, Logger, Scope } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { Consume } from '../decorators/consume.decorator';
import { MessageType } from '../decorators/message-type.decorator';
import { Publish } from '../decorators/publish.decorator';
import { Saga } from '../saga/saga.decorator';
import { SagaStep } from '../saga/saga-step.decorator';
import { MessagingExplorer } from './messaging-explorer.service';
import { MessagingMetadataAccessor } from './messaging-metadata.accessor';

@MessageType({ type: 'order.placed' })
class OrderPlaced {}

@Injectable()
class Billing {
  @Consume({ queue: 'billing' })
  onOrderPlaced(_event: OrderPlaced): void {}

  @Publish()
  placeOrder(): OrderPlaced {
    return new OrderPlaced();
  }

  undecorated(): void {}
}

class Audit {
  @Consume({ queue: 'audit', routingKeys: ['#'] })
  onAny(_event: unknown): void {}
}

class Ledger {
  @Consume({ queue: 'ledger', routingKeys: ['#'] })
  onAny(_event: unknown): void {}
}

@Injectable({ scope: Scope.REQUEST })
class PerRequest {
  @Consume({ queue: 'per-request', routingKeys: ['#'] })
  onAny(_event: unknown): void {}
}

async function explore() {
  const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  try {
    const module = await Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [
        MessagingMetadataAccessor,
        MessagingExplorer,
        Billing,
        PerRequest,
        { provide: 'AUDIT', useValue: new Audit() },
        { provide: 'LEDGER', useFactory: () => new Ledger() },
      ],
    }).compile();
    const found = module.get(MessagingExplorer).explore();
    return { ...found, warnings: warn.mock.calls.map(([message]) => String(message)) };
  } finally {
    warn.mockRestore();
  }
}

describe('MessagingExplorer', () => {
  it('finds @Consume() methods on class, useValue and useFactory providers, with their first parameter type', async () => {
    const { consumers } = await explore();

    expect(
      consumers.map((c) => [
        c.instance.constructor.name,
        c.methodName,
        c.options.queue,
        c.payloadParameterType,
      ]),
    ).toEqual([
      ['Billing', 'onOrderPlaced', 'billing', OrderPlaced],
      ['Audit', 'onAny', 'audit', Object],
      ['Ledger', 'onAny', 'ledger', Object],
    ]);
  });

  it('finds @Publish() methods', async () => {
    const { publishers } = await explore();

    expect(publishers.map((p) => [p.instance.constructor.name, p.methodName, p.options])).toEqual([
      ['Billing', 'placeOrder', {}],
    ]);
  });

  it('skips the decorated methods of request-scoped providers with a warning', async () => {
    const { consumers, warnings } = await explore();

    expect(consumers.map((c) => c.options.queue)).not.toContain('per-request');
    expect(warnings).toEqual([
      'PerRequest.onAny is request-scoped or transient; messaging decorators there are skipped',
    ]);
  });
});

@Saga({ name: 'order-fulfilment' })
class OrderFulfilment {
  @SagaStep(OrderPlaced, { correlate: () => 'key', onMissing: 'start' })
  onPlaced(_event: OrderPlaced): void {}
}

describe('MessagingExplorer and sagas', () => {
  it('finds @SagaStep() methods with their message class, step options and their class’s @Saga() options', async () => {
    const module = await Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [MessagingMetadataAccessor, MessagingExplorer, OrderFulfilment],
    }).compile();
    const { consumers } = module.get(MessagingExplorer).explore();

    expect(consumers).toHaveLength(1);
    expect(consumers[0]).toMatchObject({
      methodName: 'onPlaced',
      decorator: '@SagaStep',
      payloadParameterType: OrderPlaced,
      saga: {
        saga: { name: 'order-fulfilment' },
        step: { message: OrderPlaced, options: { onMissing: 'start' } },
      },
    });
    expect(consumers[0].instance).toBeInstanceOf(OrderFulfilment);
  });

  it('refuses a method that is both a @Consume() handler and a @SagaStep()', async () => {
    @Saga({ name: 'twice' })
    class Twice {
      @Consume({ queue: 'twice' })
      @SagaStep(OrderPlaced, { correlate: () => 'key' })
      onPlaced(_event: OrderPlaced): void {}
    }
    const module = await Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [MessagingMetadataAccessor, MessagingExplorer, Twice],
    }).compile();

    expect(() => module.get(MessagingExplorer).explore()).toThrow(
      'Twice.onPlaced has both @Consume() and @SagaStep(); keep one',
    );
  });
});
