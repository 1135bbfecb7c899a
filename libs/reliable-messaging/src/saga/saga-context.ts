import type { MessageContext } from '../context/message-context';

/**
 * What a `@SagaStep()` method receives beside its message: the message's context (its transaction is
 * `manager`) and the instance the message correlates to. The step reads and changes `state` (or assigns a new
 * one); what it leaves is written when it returns, in the same transaction as its own writes, the messages it
 * publishes and the message's inbox row. State is plain JSON: objects, arrays, strings, finite numbers,
 * booleans and null.
 */
export interface SagaContext<S extends object = Record<string, unknown>> extends MessageContext {
  /** The saga's name, as declared on `@Saga()`. */
  readonly sagaName: string;
  /** The instance's correlation key, as the step's `correlate` read it from the message. */
  readonly correlationKey: string;
  /** True when this step starts the instance (`onMissing: 'start'` and none existed). */
  readonly isNew: boolean;
  /** The version this step read: 0 for a new instance; the version it writes is one more. */
  readonly version: number;
  /** The instance's state: mutate it, or assign a new object. */
  state: S;
  /** Whether `complete()` was called in this step. */
  readonly completing: boolean;
  /**
   * Completes the instance when this step commits: its row stays, with status `completed`, so that late messages
   * meet the steps' `onCompleted` policy and its history stays inspectable, until pruned.
   */
  complete(): void;
}
