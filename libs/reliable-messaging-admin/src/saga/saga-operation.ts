import type {
  SagaHistoryEntry,
  SagaInstanceSummary,
  SagaStatus,
  SagaTimeout,
} from 'nestjs-reliable-messaging';

/** What a list of instances found. */
export interface SagaListResult {
  instances: SagaInstanceSummary[];
  /** The limit was reached with instances left. */
  more: boolean;
  /** With `more`, the cursor of the next page (`after`): the last correlation key listed. */
  next?: string;
}

/**
 * One instance as the operator's tools show it. Its state is publishers' data, so it comes as JSON text cut to
 * MAX_STATE_SHOWN characters, never as an object a page could render unescaped.
 */
export interface SagaInstanceDetail {
  sagaName: string;
  correlationKey: string;
  status: SagaStatus;
  version: number;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  /** The state as indented JSON, cut to MAX_STATE_SHOWN characters. */
  state: string;
  /** The size of the state's JSON in bytes. */
  stateBytes: number;
  /** Whether `state` was cut. */
  stateTruncated: boolean;
  /** The messages its steps handled, newest first, up to the history limit. */
  history: SagaHistoryEntry[];
  /** Older entries exist beyond the history limit. */
  historyMore: boolean;
  /** The timeouts it waits for: each scheduled message's id and due time. */
  pendingTimeouts: SagaTimeout[];
}
