import { DeliveryContext } from '../pipeline/delivery-context';
import type { SagaContext } from './saga-context';
import type { SagaTimeout } from './saga-store';

/** The instance one run of a step works on, as the saga stage loaded it and the step leaves it. */
export interface SagaStepRun {
  readonly sagaName: string;
  readonly correlationKey: string;
  /** The version read; 0 when the step starts the instance. */
  readonly version: number;
  state: object;
  completing: boolean;
  /** The timeouts the instance waits for: as loaded, less the one this message is, plus those asked for. */
  timeouts: SagaTimeout[];
  /** Schedules a timeout in the step's transaction and records it in `timeouts`. */
  requestTimeout(message: object, when: { delayMs: number } | { deliverAt: Date }): Promise<string>;
  /** Drops a timeout from `timeouts`, to be cancelled once the step's write has won; false when not waited for. */
  cancelTimeout(messageId: string): boolean;
}

/**
 * A step's context: the delivery's own (so publishing, guards, interceptors and `MessageContext` behave as for
 * any handler) with the instance the saga stage loaded, which the stage writes back once the step returns.
 */
export class SagaStepContext extends DeliveryContext implements SagaContext<object> {
  private readonly run: SagaStepRun;

  constructor(run: SagaStepRun, ...args: ConstructorParameters<typeof DeliveryContext>) {
    super(...args);
    this.run = run;
  }

  get sagaName(): string {
    return this.run.sagaName;
  }

  get correlationKey(): string {
    return this.run.correlationKey;
  }

  get isNew(): boolean {
    return this.run.version === 0;
  }

  get version(): number {
    return this.run.version;
  }

  get state(): object {
    return this.run.state;
  }

  set state(state: object) {
    this.run.state = state;
  }

  get completing(): boolean {
    return this.run.completing;
  }

  complete(): void {
    this.run.completing = true;
  }

  requestTimeout(message: object, when: { delayMs: number } | { deliverAt: Date }): Promise<string> {
    return this.run.requestTimeout(message, when);
  }

  cancelTimeout(messageId: string): boolean {
    return this.run.cancelTimeout(messageId);
  }

  get pendingTimeouts(): readonly SagaTimeout[] {
    return this.run.timeouts;
  }
}
