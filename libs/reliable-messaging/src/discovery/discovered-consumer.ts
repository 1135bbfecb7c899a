import type { HandlerContextType } from '../consuming/consumer-plan';
import type { ConsumeOptions } from '../options/consume.options';
import type { DiscoveredSagaStep } from '../saga/saga-step-planner';

/** A `@Consume()` method found at startup, its options as written on the decorator. */
export interface DiscoveredConsumer {
  /** The provider instance the handler runs on. */
  instance: object;
  methodName: string;
  options: ConsumeOptions;
  /** The declared type of the parameter that receives the payload: its message class unless `options.message` says. */
  payloadParameterType: unknown;
  /** The decorator that made it a consumer, as startup errors name it: `@Consume` or `@EventPattern`. */
  decorator: '@Consume' | '@EventPattern' | '@MessagePattern' | '@SagaStep';
  /** For a `@SagaStep()`: its declaration and its class's `@Saga()` options; `options` is then unused. */
  saga?: DiscoveredSagaStep;
  /** What `host.getType()` says in its enhancers: `rmq`, or `rpc` for an `@EventPattern()`. */
  contextType: HandlerContextType;
  /** The key of the Nest module that holds the instance. */
  moduleKey?: string;
}
