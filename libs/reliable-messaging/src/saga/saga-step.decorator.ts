import { SetMetadata, type Type } from '@nestjs/common';
import { SAGA_STEP_METADATA } from '../reliable-messaging.constants';
import type { SagaStepDeclaration, SagaStepOptions } from '../options/saga.options';

/**
 * Makes a method of a `@Saga()` class one step of it: a consumer of `message` (its own queue, retries, inbox and
 * dead-letter queue, as `@Consume()`) whose handler runs on the instance `correlate` names. The method receives the
 * validated message and a `SagaContext` with the instance's state; the state it leaves, its own writes through
 * `ctx.manager`, what it publishes and the message's inbox row commit in one transaction before the ack.
 *
 * @example
 * ＠SagaStep(OrderPlaced, { correlate: (m) => m.orderId, onMissing: 'start' })
 * onOrderPlaced(event: OrderPlaced, saga: SagaContext<OrderState>) { saga.state.placed = true; }
 */
export const SagaStep = <M extends object>(message: Type<M>, options: SagaStepOptions<M>): MethodDecorator =>
  SetMetadata(SAGA_STEP_METADATA, { message, options } as unknown as SagaStepDeclaration);
