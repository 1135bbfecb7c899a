import { Inject, Injectable } from '@nestjs/common';
import { SagaInstances, type SagaStatus } from 'nestjs-reliable-messaging';
import {
  RESOLVED_MESSAGING_OPTIONS,
  type ResolvedMessagingOptions,
} from 'nestjs-reliable-messaging/operations';
import { checkLimit } from '../dead-letter/dead-letter-selection';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { SagaInstanceNotFoundError } from '../errors/saga-instance-not-found.error';
import type { SagaInstanceDetail, SagaListResult } from './saga-operation';

/** The most characters of an instance's state the tools show; the rest is cut, and said to be. */
export const MAX_STATE_SHOWN = 16_384;
/** The history entries shown by default, and at most. */
export const DEFAULT_HISTORY = 50;
export const MAX_HISTORY = 500;
/** The most instances one list returns, whatever its limit: `more` and `next` page on. */
export const MAX_PAGE = 500;
/** The longest saga name or correlation key an operator may name. */
const MAX_NAME = 1024;

/**
 * The reads of saga instances that the command line and the admin API share: the instances of one saga in
 * correlation-key order (keyset paging, one status or both), and one instance in full: state (cut to
 * MAX_STATE_SHOWN characters), version, status, its latest history entries newest first, and the timeouts it
 * waits for. Needs the module's `dataSource` option.
 */
@Injectable()
export class SagaOperations {
  constructor(
    private readonly instances: SagaInstances,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  /**
   * Instances of `sagaName`, up to `limit`, at most (and by default) MAX_PAGE a page, after the
   * correlation key `after` when given.
   */
  async list(
    sagaName: string,
    options: { status?: string; after?: string; limit?: number } = {},
  ): Promise<SagaListResult> {
    this.requireDatabase();
    const limit = Math.min(checkLimit(options.limit), MAX_PAGE);
    const found = await this.instances.list(checkName('saga', sagaName), {
      status: statusOf(options.status),
      after:
        options.after === undefined || options.after === '' ? undefined : checkName('after', options.after),
      limit: limit + 1,
    });
    const instances = found.slice(0, limit);
    const more = found.length > limit;
    return {
      instances,
      more,
      ...(more ? { next: instances[instances.length - 1].correlationKey } : {}),
    };
  }

  /** One instance in full, with its latest `historyLimit` history entries (default 50, at most 1000). */
  async show(
    sagaName: string,
    correlationKey: string,
    options: { historyLimit?: number } = {},
  ): Promise<SagaInstanceDetail> {
    this.requireDatabase();
    const historyLimit = options.historyLimit ?? DEFAULT_HISTORY;
    if (!Number.isInteger(historyLimit) || historyLimit < 1 || historyLimit > MAX_HISTORY) {
      throw new InvalidDeadLetterQueryError(`'history' must be an integer from 1 to ${MAX_HISTORY}`);
    }
    const instance = await this.instances.find(
      checkName('saga', sagaName),
      checkName('correlationKey', correlationKey),
      { historyLimit: historyLimit + 1 },
    );
    if (!instance) throw new SagaInstanceNotFoundError(sagaName, correlationKey);
    const text = JSON.stringify(instance.state, null, 2);
    const stateTruncated = text.length > MAX_STATE_SHOWN;
    const newestFirst = [...instance.history].reverse();
    return {
      sagaName: instance.sagaName,
      correlationKey: instance.correlationKey,
      status: instance.status,
      version: instance.version,
      createdAt: new Date(instance.createdAt),
      updatedAt: new Date(instance.updatedAt),
      completedAt: instance.completedAt === null ? null : new Date(instance.completedAt),
      state: stateTruncated ? text.slice(0, MAX_STATE_SHOWN) : text,
      stateBytes: Buffer.byteLength(JSON.stringify(instance.state), 'utf8'),
      stateTruncated,
      history: newestFirst.slice(0, historyLimit),
      historyMore: newestFirst.length > historyLimit,
      pendingTimeouts: [...instance.pendingTimeouts],
    };
  }

  private requireDatabase(): void {
    if (!this.options.dataSource) {
      throw new InvalidDeadLetterQueryError('there are no sagas without the module option dataSource');
    }
  }
}

function checkName(field: string, value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_NAME) {
    throw new InvalidDeadLetterQueryError(`'${field}' must be a string of 1 to ${MAX_NAME} characters`);
  }
  return value;
}

function statusOf(value: string | undefined): SagaStatus | undefined {
  if (value === undefined || value === '') return undefined;
  if (value !== 'active' && value !== 'completed') {
    throw new InvalidDeadLetterQueryError(
      `'status' must be active or completed, got '${value.slice(0, 40)}'`,
    );
  }
  return value;
}
