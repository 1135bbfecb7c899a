import { getMessageDefinition } from '../decorators/message-type.decorator';
import { ConfigurationError } from '../errors/configuration.error';
import type { ConsumeOptions } from '../options/consume.options';
import { assertKnownKeys } from '../options/known-keys';
import { assertInteger } from '../options/option-assertions';
import {
  SAGA_OPTION_KEYS,
  SAGA_STEP_OPTION_KEYS,
  type SagaOptions,
  type SagaStepDeclaration,
} from '../options/saga.options';
import type { SagaStepPlan } from './saga-step-plan';

/** A saga's name: what its rows are stored under, and the default prefix of its queues. */
const SAGA_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export const DEFAULT_MAX_STATE_BYTES = 65_536;
export const DEFAULT_MAX_CONFLICT_RERUNS = 10;

const MISSING_POLICIES = ['start', 'ignore', 'dead-letter'];
const COMPLETED_POLICIES = ['ignore', 'dead-letter'];

/** A `@SagaStep()` method as discovery found it: its class's `@Saga()` options (if any) and its own declaration. */
export interface DiscoveredSagaStep {
  readonly saga: SagaOptions | undefined;
  readonly step: SagaStepDeclaration;
}

/**
 * Resolves a `@SagaStep()` into the `@Consume()` options its consumer is planned with (its queue, its message
 * class, dedup on: the step's transaction is the inbox's) and its saga plan; fails startup with a
 * ConfigurationError that says how to fix the first wrong option. `name` is `Class.method`; `hasDatabase` says
 * whether the module has somewhere to keep instances: its `dataSource`, or memory (`inbox.store: 'memory'`).
 */
export function planSagaStep(
  discovered: DiscoveredSagaStep,
  name: string,
  hasDatabase: boolean,
): { consume: ConsumeOptions; saga: SagaStepPlan } {
  const where = `@SagaStep on ${name}`;
  const saga = discovered.saga;
  if (!saga || typeof saga !== 'object') {
    throw new ConfigurationError(
      `${where}: the class has no @Saga(); declare it, e.g. @Saga({ name: 'order-fulfilment' })`,
    );
  }
  assertKnownKeys(saga, SAGA_OPTION_KEYS, `@Saga on ${name.split('.')[0]}`);
  if (typeof saga.name !== 'string' || !SAGA_NAME.test(saga.name)) {
    throw new ConfigurationError(
      `@Saga on ${name.split('.')[0]}: 'name' must be 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit, got ${JSON.stringify(saga.name)}`,
    );
  }
  if (!hasDatabase) {
    throw new ConfigurationError(
      `${where}: sagas keep their instances in the module's database; configure the dataSource option`,
    );
  }
  const { message, options } = discovered.step ?? {};
  if (typeof message !== 'function' || typeof options !== 'object' || options === null) {
    throw new ConfigurationError(`${where}: write @SagaStep(MessageClass, { correlate: (m) => m.id })`);
  }
  assertKnownKeys(options, SAGA_STEP_OPTION_KEYS, where);
  if (typeof options.correlate !== 'function') {
    throw new ConfigurationError(
      `${where}: 'correlate' is required, a function reading the instance's key from the message`,
    );
  }
  const onMissing = options.onMissing ?? 'dead-letter';
  if (!MISSING_POLICIES.includes(onMissing)) {
    throw new ConfigurationError(
      `${where}: 'onMissing' must be 'start', 'ignore' or 'dead-letter', got ${String(onMissing)}`,
    );
  }
  const onCompleted = options.onCompleted ?? 'ignore';
  if (!COMPLETED_POLICIES.includes(onCompleted)) {
    throw new ConfigurationError(
      `${where}: 'onCompleted' must be 'ignore' or 'dead-letter', got ${String(onCompleted)}`,
    );
  }
  const initialState = saga.initialState ?? (() => ({}));
  if (typeof initialState !== 'function') {
    throw new ConfigurationError(
      `@Saga '${saga.name}': 'initialState' must be a function returning the new state`,
    );
  }
  const maxStateBytes = saga.maxStateBytes ?? DEFAULT_MAX_STATE_BYTES;
  assertInteger(`@Saga '${saga.name}' maxStateBytes`, maxStateBytes, 2, 16 * 1024 * 1024);
  const maxConflictReruns = saga.maxConflictReruns ?? DEFAULT_MAX_CONFLICT_RERUNS;
  assertInteger(`@Saga '${saga.name}' maxConflictReruns`, maxConflictReruns, 0, 1000);

  const definition = getMessageDefinition(message);
  if (!definition && options.queue === undefined) {
    throw new ConfigurationError(
      `${where}: ${message.name} has no @MessageType(), so the step's queue cannot be named after it; add one`,
    );
  }
  const { correlate, onMissing: _m, onCompleted: _c, queue, ...consumer } = options;
  return {
    consume: {
      ...consumer,
      queue: queue ?? `${saga.queuePrefix ?? saga.name}.${definition?.type ?? ''}`,
      message,
      dedup: true,
    },
    saga: Object.freeze({
      saga: saga.name,
      step: name,
      correlate,
      onMissing,
      onCompleted,
      initialState,
      maxStateBytes,
      maxConflictReruns,
    }),
  };
}

/**
 * One class per saga name: two would read and write each other's instances. Each step of a saga sits on the
 * class that declares it, so a name seen on two classes is a copy-paste to fix.
 */
export function assertDistinctSagas(steps: readonly { saga: SagaStepPlan; className: string }[]): void {
  const owners = new Map<string, string>();
  for (const { saga, className } of steps) {
    const owner = owners.get(saga.saga);
    if (owner !== undefined && owner !== className) {
      throw new ConfigurationError(
        `@Saga: ${owner} and ${className} are both named '${saga.saga}'; give each saga its own name`,
      );
    }
    owners.set(saga.saga, className);
  }
}
