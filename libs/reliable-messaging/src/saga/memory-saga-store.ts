import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { SagaHistoryEntry, SagaInstanceView } from './saga-instance-view';
import type { SagaStore, SagaTimeout, StepWrite, StoredInstance } from './saga-store';

interface MemoryInstance {
  readonly id: string;
  readonly sagaName: string;
  readonly correlationKey: string;
  status: StoredInstance['status'];
  /** As JSON text, as the table keeps it: each load reads a copy, never the object a step changed. */
  state: string;
  version: number;
  timeouts: SagaTimeout[];
  readonly createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  readonly history: SagaHistoryEntry[];
}

/**
 * The saga instances of tests without a database (`inbox.store: 'memory'`, which ReliableMessagingTestingModule
 * sets without a `dataSource`): the rows of `rm_saga` and `rm_saga_history`, in this process's memory. The saga
 * stage runs on it unchanged, so correlation, the onMissing and onCompleted policies, the state checks, versions,
 * completion and history behave as with the database; a write that finds the version moved on writes nothing,
 * as the table's UPDATE would, and the step runs again. Forgets nothing while the process lives, unless cleared.
 */
@Injectable()
export class MemorySagaStore implements SagaStore {
  readonly transactional = false;
  private readonly instances = new Map<string, MemoryInstance>();
  private lastId = 0;

  /**
   * Reads the instance. `lock` is ignored: in the database it keeps a re-run from losing its race again under heavy
   * contention; here the write's version check alone decides, which a test's few concurrent steps never starve on.
   */
  load(
    _manager: EntityManager | undefined,
    saga: string,
    correlationKey: string,
    _lock = false,
  ): Promise<StoredInstance | undefined> {
    const found = this.instances.get(keyOf(saga, correlationKey));
    return Promise.resolve(found && stored(found));
  }

  write(_manager: EntityManager | undefined, write: StepWrite): Promise<boolean> {
    const key = keyOf(write.saga, write.correlationKey);
    const found = this.instances.get(key);
    const now = new Date();
    const completedAt = write.status === 'completed' ? now : null;
    let instance: MemoryInstance;
    if (write.expectedVersion === 0) {
      if (found) return Promise.resolve(false);
      instance = {
        id: String(++this.lastId),
        sagaName: write.saga,
        correlationKey: write.correlationKey,
        status: write.status,
        state: write.state,
        version: 1,
        timeouts: [...write.timeouts],
        createdAt: now,
        updatedAt: now,
        completedAt,
        history: [],
      };
      this.instances.set(key, instance);
    } else {
      if (!found || found.id !== write.id || found.version !== write.expectedVersion)
        return Promise.resolve(false);
      instance = found;
      Object.assign(instance, {
        status: write.status,
        state: write.state,
        version: found.version + 1,
        timeouts: [...write.timeouts],
        updatedAt: now,
        completedAt,
      });
    }
    instance.history.push(historyEntry(instance.version, write, write.outcome, now));
    return Promise.resolve(true);
  }

  recordIgnored(
    _manager: EntityManager | undefined,
    instance: StoredInstance,
    message: { messageId: string; messageType: string; step: string },
  ): Promise<void> {
    const found = [...this.instances.values()].find((each) => each.id === instance.id);
    found?.history.push(historyEntry(instance.version, message, 'ignored', new Date()));
    return Promise.resolve();
  }

  /** The instance as `SagaInstances.find()` shows it, with its latest `historyLimit` history entries. */
  find(saga: string, correlationKey: string, historyLimit: number): SagaInstanceView | undefined {
    const found = this.instances.get(keyOf(saga, correlationKey));
    if (!found) return undefined;
    const { id: _id, state, timeouts, history, ...rest } = found;
    return {
      ...rest,
      state: JSON.parse(state) as Record<string, unknown>,
      pendingTimeouts: timeouts.map((timeout) => ({ ...timeout })),
      history: historyLimit > 0 ? history.slice(-historyLimit).map((entry) => ({ ...entry })) : [],
    };
  }

  /** Deletes up to `limit` instances completed before `before`; resolves with how many went. */
  pruneCompleted(before: Date, limit: number): number {
    let count = 0;
    for (const [key, instance] of this.instances) {
      if (count >= limit) break;
      if (instance.completedAt !== null && instance.completedAt < before) {
        this.instances.delete(key);
        count++;
      }
    }
    return count;
  }

  /** Forgets every instance. */
  clear(): void {
    this.instances.clear();
  }
}

function keyOf(saga: string, correlationKey: string): string {
  return `${saga}\u0000${correlationKey}`;
}

function stored(instance: MemoryInstance): StoredInstance {
  return {
    id: instance.id,
    status: instance.status,
    state: JSON.parse(instance.state) as object,
    version: instance.version,
    timeouts: instance.timeouts.map((timeout) => ({ ...timeout })),
  };
}

function historyEntry(
  version: number,
  message: { messageId: string; messageType: string; step: string },
  outcome: SagaHistoryEntry['outcome'],
  handledAt: Date,
): SagaHistoryEntry {
  const { messageId, messageType, step } = message;
  return { version, messageId, messageType, step, outcome, handledAt };
}
