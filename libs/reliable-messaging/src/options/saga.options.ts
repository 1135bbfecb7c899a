import type { Type } from '@nestjs/common';
import type { ConsumeOptions } from './consume.options';
import { optionKeys } from './known-keys';

/** What a step does with a message whose instance does not exist: start one, ignore the message, or dead-letter it. */
export type SagaMissingPolicy = 'start' | 'ignore' | 'dead-letter';

/** What a step does with a message whose instance has completed: ignore it, or dead-letter it. */
export type SagaCompletedPolicy = 'ignore' | 'dead-letter';

/** Options of `@Saga()`. */
export interface SagaOptions {
  /**
   * The saga's name: instances are stored under it (with their correlation key), so it must stay the same across
   * releases. Letters, digits, `.`, `_` and `-`, at most 100 characters.
   */
  name: string;
  /**
   * The prefix of its steps' queues: a step reads `<queuePrefix>.<message type>` unless it names a queue.
   * Default: `name`.
   */
  queuePrefix?: string;
  /** The state a new instance starts with, before its first step runs. Default: `() => ({})`. */
  initialState?: () => object;
  /**
   * The largest state accepted, in bytes of its JSON; a step that leaves a larger one is dead-lettered
   * (`saga-state-invalid`). Default: 65536.
   */
  maxStateBytes?: number;
  /**
   * How many times a step that lost a race for its instance (another step updated it first) runs again at once, in a
   * fresh transaction that locks the instance as it reads it, without spending an attempt; past that the conflict is
   * an ordinary, retried failure. A locked re-run loses again only to a concurrent start of the instance, so one
   * re-run is nearly always enough. Default: 10.
   */
  maxConflictReruns?: number;
}

/** The `@Consume()` options a saga step takes too; the rest (dedup, reply, lanes, wire formats) are fixed for steps. */
export type SagaStepConsumeOptions = Pick<
  ConsumeOptions,
  | 'concurrency'
  | 'prefetch'
  | 'queueType'
  | 'queueArguments'
  | 'deadlineMs'
  | 'rateLimit'
  | 'retry'
  | 'ordering'
  | 'acceptedMajorVersions'
>;

/** Options of `@SagaStep()`. */
export interface SagaStepOptions<M extends object = object> extends SagaStepConsumeOptions {
  /**
   * Reads the instance's correlation key from the message: a non-empty string of at most 256 characters without
   * control characters, or a safe integer. A message whose key breaks this is dead-lettered
   * (`saga-correlation-invalid`).
   */
  correlate: (message: M) => string | number;
  /** What a message whose instance does not exist does. Default: `'dead-letter'` (`saga-instance-missing`). */
  onMissing?: SagaMissingPolicy;
  /** What a message whose instance has completed does. Default: `'ignore'`. */
  onCompleted?: SagaCompletedPolicy;
  /** The queue this step reads. Default: `<queuePrefix>.<message type>`. */
  queue?: string;
}

/** What `@SagaStep()` records on a method: the message class and the options. */
export interface SagaStepDeclaration {
  message: Type<object>;
  options: SagaStepOptions;
}

/** Every key of `@Saga()`'s options, for the startup check that refuses a key it does not know. */
export const SAGA_OPTION_KEYS = optionKeys<SagaOptions>({
  name: true,
  queuePrefix: true,
  initialState: true,
  maxStateBytes: true,
  maxConflictReruns: true,
});

/** Every key of `@SagaStep()`'s options. */
export const SAGA_STEP_OPTION_KEYS = optionKeys<SagaStepOptions>({
  correlate: true,
  onMissing: true,
  onCompleted: true,
  queue: true,
  concurrency: true,
  prefetch: true,
  queueType: true,
  queueArguments: true,
  deadlineMs: true,
  rateLimit: true,
  retry: true,
  ordering: true,
  acceptedMajorVersions: true,
});
