import type { SagaTimeout } from './saga-store';
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
   * meet the steps' `onCompleted` policy and its history stays inspectable, until pruned. The timeouts it still
   * waits for are cancelled in the same transaction.
   */
  complete(): void;
  /**
   * Asks for a timeout: `message` is published with `delayMs` or `deliverAt` in this step's transaction (a
   * scheduled message, docs/scheduling.md), and the instance waits for it until it arrives or the instance
   * completes, which cancels it. It arrives as any message does, at the saga's step for its type, which correlates
   * it to this instance by its key. Resolves with its message id. Needs the module's `dataSource`.
   */
  requestTimeout(message: object, when: { delayMs: number } | { deliverAt: Date }): Promise<string>;
  /**
   * Stops waiting for the timeout `requestTimeout()` resolved with `messageId` (keep it in the state): when this
   * step commits, its scheduled message is cancelled in the same transaction. Returns false when the instance does
   * not wait for it (it arrived, or was cancelled before). A timeout already due has entered the outbox and still
   * arrives: its step should find nothing left to do.
   */
  cancelTimeout(messageId: string): boolean;
  /** The timeouts the instance waits for, as this step leaves them. */
  readonly pendingTimeouts: readonly SagaTimeout[];
}
