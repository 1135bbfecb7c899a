import type { SagaCompletedPolicy, SagaMissingPolicy } from '../options/saga.options';

/**
 * What one `@SagaStep()` runs with, resolved from its options and its saga's at startup (saga-step-planner.ts)
 * and frozen; it sits on the step's ConsumerPlan as `saga`, beside the consumer settings every handler has.
 */
export interface SagaStepPlan {
  /** The saga's name, under which its instances are stored. */
  readonly saga: string;
  /** `Class.method`, recorded in each instance's history. */
  readonly step: string;
  /** Reads the correlation key from the validated message. */
  readonly correlate: (message: object) => unknown;
  /** What a message whose instance does not exist does. */
  readonly onMissing: SagaMissingPolicy;
  /** What a message whose instance has completed does. */
  readonly onCompleted: SagaCompletedPolicy;
  /** The state a new instance starts with. */
  readonly initialState: () => object;
  /** The largest state accepted, in bytes of JSON. */
  readonly maxStateBytes: number;
  /** Immediate re-runs after a lost race for the instance, spending no attempt. */
  readonly maxConflictReruns: number;
}
