import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { MessageType } from '../decorators/message-type.decorator';
import { ConfigurationError } from '../errors/configuration.error';
import type { SagaOptions, SagaStepOptions } from '../options/saga.options';
import { assertDistinctSagas, planSagaStep } from './saga-step-planner';

@MessageType({ type: 'order.placed', idempotencyKey: (m: OrderPlaced) => m.orderId })
class OrderPlaced {
  orderId!: string;
}

class Untyped {
  orderId!: string;
}

const STEP = 'OrderFulfilment.onPlaced';
const correlate = (m: OrderPlaced): string => m.orderId;

function planned(
  saga: Partial<SagaOptions> | undefined,
  step: Partial<SagaStepOptions<OrderPlaced>> = {},
  { message = OrderPlaced, hasDatabase = true }: { message?: new () => object; hasDatabase?: boolean } = {},
) {
  return planSagaStep(
    {
      saga: saga as SagaOptions | undefined,
      step: { message, options: { correlate, ...step } as SagaStepOptions },
    },
    STEP,
    hasDatabase,
  );
}

describe('planSagaStep', () => {
  it('plans a step as a deduplicating consumer of its message on <saga>.<type>, with the defaults', () => {
    const { consume, saga } = planned({ name: 'order-fulfilment' });

    expect(consume).toEqual({ queue: 'order-fulfilment.order.placed', message: OrderPlaced, dedup: true });
    expect(saga).toMatchObject({
      saga: 'order-fulfilment',
      step: STEP,
      onMissing: 'dead-letter',
      onCompleted: 'ignore',
      maxStateBytes: 65_536,
      maxConflictReruns: 10,
    });
    expect(saga.initialState()).toEqual({});
    expect(Object.isFrozen(saga)).toBe(true);
  });

  it("passes the step's consumer options on, and takes its queue, policies and the saga's prefix and limits", () => {
    const initialState = () => ({ paid: false });
    const withPrefix = planned(
      {
        name: 'order-fulfilment',
        queuePrefix: 'shop.fulfilment',
        initialState,
        maxStateBytes: 1024,
        maxConflictReruns: 0,
      },
      { onMissing: 'start', onCompleted: 'dead-letter', concurrency: 4, retry: { maxAttempts: 2 } },
    );
    expect(withPrefix.consume).toEqual({
      queue: 'shop.fulfilment.order.placed',
      message: OrderPlaced,
      dedup: true,
      concurrency: 4,
      retry: { maxAttempts: 2 },
    });
    expect(withPrefix.saga).toMatchObject({
      onMissing: 'start',
      onCompleted: 'dead-letter',
      initialState,
      maxStateBytes: 1024,
      maxConflictReruns: 0,
    });
    expect(planned({ name: 'order-fulfilment' }, { queue: 'own-queue' }).consume.queue).toBe('own-queue');
  });

  it.each<[string, Partial<SagaOptions> | undefined, Partial<SagaStepOptions<OrderPlaced>>, RegExp]>([
    ['a class without @Saga()', undefined, {}, /the class has no @Saga\(\)/],
    ['a saga name with a space', { name: 'order fulfilment' }, {}, /'name' must be 1 to 100 letters/],
    ['an empty saga name', { name: '' }, {}, /'name' must be/],
    [
      'an unknown @Saga() option',
      { name: 'a', maxStateByte: 1 } as Partial<SagaOptions>,
      {},
      /unknown option `maxStateByte`; did you mean `maxStateBytes`/,
    ],
    [
      'an unknown @SagaStep() option',
      { name: 'a' },
      { onMising: 'start' } as never,
      /unknown option `onMising`; did you mean `onMissing`/,
    ],
    [
      'a step option @Consume() has but steps do not',
      { name: 'a' },
      { dedup: false } as never,
      /unknown option `dedup`/,
    ],
    ['no correlate', { name: 'a' }, { correlate: undefined }, /'correlate' is required/],
    [
      'an unknown onMissing',
      { name: 'a' },
      { onMissing: 'create' as never },
      /'onMissing' must be 'start', 'ignore' or 'dead-letter'/,
    ],
    [
      'onCompleted: start',
      { name: 'a' },
      { onCompleted: 'start' as never },
      /'onCompleted' must be 'ignore' or 'dead-letter'/,
    ],
    ['a maxStateBytes of 0', { name: 'a', maxStateBytes: 0 }, {}, /maxStateBytes' must be an integer from 2/],
    [
      'a negative maxConflictReruns',
      { name: 'a', maxConflictReruns: -1 },
      {},
      /maxConflictReruns' must be an integer from 0/,
    ],
  ])('refuses %s at startup', (_case, saga, step, message) => {
    expect(() => planned(saga, step)).toThrow(ConfigurationError);
    expect(() => planned(saga, step)).toThrow(message);
  });

  it('refuses a step when the module has no database, and a message class without @MessageType() and no queue', () => {
    expect(() => planned({ name: 'a' }, {}, { hasDatabase: false })).toThrow(
      /configure the dataSource option/,
    );
    expect(() => planned({ name: 'a' }, {}, { message: Untyped })).toThrow(/Untyped has no @MessageType\(\)/);
    expect(planned({ name: 'a' }, { queue: 'a.untyped' }, { message: Untyped }).consume.queue).toBe(
      'a.untyped',
    );
  });
});

describe('assertDistinctSagas', () => {
  const step = (saga: string) => planned({ name: saga }).saga;

  it('accepts the steps of one class sharing a saga name, and different names on different classes', () => {
    expect(() =>
      assertDistinctSagas([
        { saga: step('a'), className: 'A' },
        { saga: step('a'), className: 'A' },
        { saga: step('b'), className: 'B' },
      ]),
    ).not.toThrow();
  });

  it('refuses one saga name on two classes', () => {
    expect(() =>
      assertDistinctSagas([
        { saga: step('a'), className: 'A' },
        { saga: step('a'), className: 'Copy' },
      ]),
    ).toThrow("@Saga: A and Copy are both named 'a'; give each saga its own name");
  });
});
