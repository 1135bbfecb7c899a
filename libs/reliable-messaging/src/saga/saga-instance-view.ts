import type { SagaOutcome, SagaStatus, SagaTimeout } from './saga-store';

/** One message in an instance's history. */
export interface SagaHistoryEntry {
  /** The instance's version after the message (unchanged for an ignored one). */
  readonly version: number;
  readonly messageId: string;
  readonly messageType: string;
  /** The step that handled it, `Class.method`. */
  readonly step: string;
  readonly outcome: SagaOutcome;
  readonly handledAt: Date;
}

/** A saga instance as `SagaInstances.find()` shows it. */
export interface SagaInstanceView {
  readonly sagaName: string;
  readonly correlationKey: string;
  readonly status: SagaStatus;
  readonly state: Record<string, unknown>;
  readonly version: number;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  /** When a step completed it; null while active. */
  readonly completedAt: Date | null;
  /** Its latest history entries, oldest first. */
  readonly history: readonly SagaHistoryEntry[];
  /** The timeouts it waits for (`SagaContext.requestTimeout()`): each scheduled message's id and due time. */
  readonly pendingTimeouts: readonly SagaTimeout[];
}
