import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { ChannelModel, GetMessage } from 'amqplib';
import { JSON_CONTENT_TYPE } from '../reliable-messaging.constants';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { parseJsonBody } from '../envelope/safe-json';
import { DeadLetterNotFoundError } from '../errors/dead-letter-not-found.error';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { UnroutableMessageError } from '../errors/publish.error';
import { errorMessage } from '../util/error-text';
import type { DeadLetterAuditAction } from './dead-letter-audit.entity';
import { DeadLetterAudit } from './dead-letter-audit.service';
import { matchesFilter, narrowsSelection, type DeadLetterFilter } from './dead-letter-filter';
import { DeadLetterReader } from './dead-letter-reader';
import { consumerQueueOf, DEAD_LETTER_QUEUE_SUFFIX } from '../dead-letter/dead-letter-queue';
import { readDeadLetter, type DeadLetter } from '../dead-letter/dead-letter-record';
import { replayMessage } from './replay-message';

/** The most messages one list, replay or purge touches unless it says otherwise. */
export const DEFAULT_DEAD_LETTER_LIMIT = 1000;
/** The most messages one operation may touch. */
export const MAX_DEAD_LETTER_LIMIT = 100_000;

/** Which dead letters a replay or purge applies to: a filter, or `all` for every message of the queue(s). */
export interface DeadLetterSelection extends DeadLetterFilter {
  /** Required to replay or purge without any other filter than the queue. Default: false. */
  all?: boolean;
}

/** How an operation runs. */
export interface DeadLetterOperationOptions {
  /** Who runs it, for the audit record (an OS user, a token name). */
  actor: string;
  /** Report what would be done and change nothing (no audit record either). Default: false. */
  dryRun?: boolean;
  /** The most messages to touch; more matching ones stay for a next run (`more: true`). Default: 1000. */
  limit?: number;
  /** A free-text note for the audit record (a ticket, a reason). */
  note?: string;
  /** Called as messages are read, for a progress bar. */
  onProgress?: (scanned: number, total: number) => void;
}

/** What an operation did, or would do in a dry run. */
export interface DeadLetterOperationResult {
  action: DeadLetterAuditAction;
  dryRun: boolean;
  /** The ids of the messages replayed or purged (or that would be). */
  messageIds: string[];
  /** Messages that matched but could not be handled, and why; they stay in their dead-letter queue. */
  failures: Array<{ messageId?: string; error: string }>;
  /** Messages read. */
  scanned: number;
  /** The limit was reached with messages left unread: run again for the rest. */
  more: boolean;
  /** The audit record's id (none for a dry run). */
  auditId?: string;
}

/** What a list found. */
export interface DeadLetterListResult {
  deadLetters: DeadLetter[];
  scanned: number;
  more: boolean;
}

type Visit = (reader: DeadLetterReader, message: GetMessage, deadLetter: DeadLetter) => Promise<boolean>;

/**
 * The operations on dead letters that the command line and the admin API share: list with filters, show one,
 * replay (one, a filtered set, a time window), edit a body and replay it, purge. Each reads the dead-letter
 * queues with a DeadLetterReader (nothing is lost or reordered: only what is replayed or purged is removed);
 * each can be a dry run; each replay, edit and purge is audited. Replays are confirmed by the broker before
 * their dead letter is removed.
 */
@Injectable()
export class DeadLetterOperations {
  constructor(
    private readonly connection: ConsumerConnection,
    private readonly registry: ConsumerRegistry,
    private readonly publisher: ConfirmPublisher,
    private readonly audit: DeadLetterAudit,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  /** The consumer queues of this app, each with a dead-letter queue `<queue>.dlq`. */
  knownQueues(): string[] {
    return this.registry.discoveredConsumers.map((consumer) => consumer.queue);
  }

  /** Dead letters matching the filter, oldest first, up to `limit` (default 1000). */
  async list(
    filter: DeadLetterFilter,
    options: Pick<DeadLetterOperationOptions, 'limit' | 'onProgress'> = {},
  ): Promise<DeadLetterListResult> {
    const limit = checkLimit(options.limit);
    const deadLetters: DeadLetter[] = [];
    const { scanned, more } = await this.scan(
      filter,
      limit,
      options.onProgress,
      async (_reader, _message, deadLetter) => {
        deadLetters.push(deadLetter);
        return true;
      },
    );
    return { deadLetters, scanned, more };
  }

  /** One dead letter by message id, searched in `queue`'s dead-letter queue or in all of them. */
  async show(messageId: string, queue?: string): Promise<DeadLetter> {
    const found = await this.list({ queue, messageIds: [messageId] }, { limit: 1 });
    if (found.deadLetters.length === 0)
      throw new DeadLetterNotFoundError(messageId, this.deadLetterQueues(queue));
    return found.deadLetters[0];
  }

  /**
   * Sends the selected dead letters back to the queue they failed in (see replayMessage) and removes each once
   * the broker confirmed its replay. A message whose queue no longer exists stays, reported as a failure.
   */
  async replay(
    selection: DeadLetterSelection,
    options: DeadLetterOperationOptions,
  ): Promise<DeadLetterOperationResult> {
    requireSelection('replay', selection);
    const replayedAt = new Date();
    return this.operate('replay', selection, options, async (reader, message, deadLetter, result) => {
      const published = await this.publishReplay(deadLetter, replayedAt, result);
      return published === 'published'
        ? this.remove(reader, message, deadLetter, result, 'replayed')
        : published;
    });
  }

  /**
   * Replaces the body of one dead letter and replays it. A JSON message's new body must be valid JSON (checked
   * as consumers check it) and within the payload limit.
   */
  async editAndReplay(
    queue: string,
    messageId: string,
    body: Buffer,
    options: Omit<DeadLetterOperationOptions, 'limit'>,
  ): Promise<DeadLetterOperationResult & { before: DeadLetter }> {
    if (!queue) throw new InvalidDeadLetterQueryError("an edit needs the message's 'queue'");
    const before = await this.show(messageId, queue);
    this.checkBody(before, body);
    const digest = (data: Buffer) => createHash('sha256').update(data).digest('hex');
    const details = { bodySha256Before: digest(before.body), bodySha256After: digest(body) };
    const replayedAt = new Date();
    const result = await this.operate(
      'edit-replay',
      { queue, messageIds: [messageId] },
      { ...options, limit: 1 },
      async (reader, message, deadLetter, outcome) => {
        const published = await this.publishReplay(deadLetter, replayedAt, outcome, body);
        return published === 'published'
          ? this.remove(reader, message, deadLetter, outcome, 'replayed')
          : published;
      },
      details,
    );
    if (result.messageIds.length + result.failures.length === 0) {
      throw new DeadLetterNotFoundError(messageId, this.deadLetterQueues(queue));
    }
    return { ...result, before };
  }

  /** Removes the selected dead letters for good. */
  async purge(
    selection: DeadLetterSelection,
    options: DeadLetterOperationOptions,
  ): Promise<DeadLetterOperationResult> {
    requireSelection('purge', selection);
    return this.operate('purge', selection, options, async (reader, message, deadLetter, result) =>
      this.remove(reader, message, deadLetter, result, 'purged'),
    );
  }

  private async operate(
    action: DeadLetterAuditAction,
    selection: DeadLetterSelection,
    options: DeadLetterOperationOptions,
    act: (
      reader: DeadLetterReader,
      message: GetMessage,
      deadLetter: DeadLetter,
      result: DeadLetterOperationResult,
    ) => Promise<'next' | 'stop'>,
    details: Record<string, unknown> = {},
  ): Promise<DeadLetterOperationResult> {
    const limit = checkLimit(options.limit);
    if (typeof options.actor !== 'string' || options.actor.trim() === '') {
      throw new InvalidDeadLetterQueryError(`a ${action} needs an actor for its audit record`);
    }
    const { all: _all, ...filter } = selection;
    const result: DeadLetterOperationResult = {
      action,
      dryRun: options.dryRun === true,
      messageIds: [],
      failures: [],
      scanned: 0,
      more: false,
    };
    const record = result.dryRun
      ? undefined
      : await this.audit.begin({
          action,
          actor: options.actor,
          queue: filter.queue === undefined ? undefined : consumerQueueOf(filter.queue),
          selection: describeSelection(selection, limit),
          details: { ...details, ...(options.note ? { note: options.note } : {}) },
        });
    result.auditId = record?.id;
    try {
      const { scanned, more } = await this.scan(
        filter,
        limit,
        options.onProgress,
        async (reader, message, deadLetter) => {
          if (result.dryRun) {
            result.messageIds.push(deadLetter.messageId ?? '(no message id)');
            return true;
          }
          return (await act(reader, message, deadLetter, result)) === 'next';
        },
      );
      result.scanned = scanned;
      result.more = more;
    } catch (error) {
      if (record) {
        await this.audit
          .finish(record, {
            messageIds: result.messageIds,
            outcome: 'failed',
            details: { error: errorMessage(error), failures: result.failures },
          })
          .catch(() => undefined);
      }
      throw error;
    }
    if (record) {
      await this.audit.finish(record, {
        messageIds: result.messageIds,
        outcome: 'completed',
        details: result.failures.length > 0 ? { failures: result.failures } : {},
      });
    }
    return result;
  }

  /**
   * Publishes a replay with a confirm. A message whose queue is gone is skipped (it stays, reported); any
   * other failure stops the operation, since the broker path itself is broken.
   */
  private async publishReplay(
    deadLetter: DeadLetter,
    replayedAt: Date,
    result: DeadLetterOperationResult,
    body?: Buffer,
  ): Promise<'published' | 'next' | 'stop'> {
    try {
      await this.publisher.publish(replayMessage(deadLetter, replayedAt, body));
      return 'published';
    } catch (error) {
      const unroutable = error instanceof UnroutableMessageError;
      result.failures.push({
        messageId: deadLetter.messageId,
        error: unroutable
          ? `queue '${deadLetter.queue}' does not exist; the dead letter stays`
          : errorMessage(error),
      });
      return unroutable ? 'next' : 'stop';
    }
  }

  private remove(
    reader: DeadLetterReader,
    message: GetMessage,
    deadLetter: DeadLetter,
    result: DeadLetterOperationResult,
    done: 'replayed' | 'purged',
  ): 'next' | 'stop' {
    if (reader.remove(message)) {
      result.messageIds.push(deadLetter.messageId ?? '(no message id)');
      return 'next';
    }
    result.failures.push({
      messageId: deadLetter.messageId,
      error:
        done === 'replayed'
          ? 'replayed, but the connection closed before its dead letter was removed: it stays, and replaying it again is deduplicated'
          : 'the connection closed before it was removed; it stays',
    });
    return 'stop';
  }

  private checkBody(deadLetter: DeadLetter, body: Buffer): void {
    if (body.length > this.options.maxPayloadBytes) {
      throw new InvalidDeadLetterQueryError(
        `the new body is ${body.length} bytes, above the limit of ${this.options.maxPayloadBytes} (maxPayloadBytes)`,
      );
    }
    const contentType = deadLetter.contentType?.split(';')[0].trim().toLowerCase();
    if (contentType === undefined || contentType === JSON_CONTENT_TYPE) {
      try {
        parseJsonBody(body);
      } catch (error) {
        throw new InvalidDeadLetterQueryError(
          `the new body is not accepted: ${error instanceof InvalidMessageError ? error.message : errorMessage(error)}`,
        );
      }
    }
  }

  /** Reads the selected dead-letter queues in turn, calling `visit` for each matching message up to `limit`. */
  private async scan(
    filter: DeadLetterFilter,
    limit: number,
    onProgress: DeadLetterOperationOptions['onProgress'],
    visit: Visit,
  ): Promise<{ scanned: number; more: boolean }> {
    const model = this.model();
    const readers: DeadLetterReader[] = [];
    try {
      for (const queue of this.deadLetterQueues(filter.queue))
        readers.push(await DeadLetterReader.open(model, queue));
      const total = readers.reduce((sum, reader) => sum + reader.depth, 0);
      let scanned = 0;
      let matched = 0;
      onProgress?.(0, total);
      for (const reader of readers) {
        for (;;) {
          if (matched >= limit) return { scanned, more: scanned < total };
          const message = await reader.next();
          if (!message) break;
          scanned++;
          onProgress?.(scanned, total);
          const deadLetter = readDeadLetter(message, reader.queue);
          if (!matchesFilter(deadLetter, filter)) continue;
          matched++;
          if (!(await visit(reader, message, deadLetter))) return { scanned, more: scanned < total };
        }
        await reader.close();
      }
      return { scanned, more: false };
    } finally {
      for (const reader of readers) await reader.close();
    }
  }

  private deadLetterQueues(queue?: string): string[] {
    if (queue !== undefined)
      return [queue.endsWith(DEAD_LETTER_QUEUE_SUFFIX) ? queue : `${queue}${DEAD_LETTER_QUEUE_SUFFIX}`];
    const queues = this.knownQueues();
    if (queues.length === 0) {
      throw new InvalidDeadLetterQueryError('this app has no @Consume() handlers; name the queue to read');
    }
    return queues.map((name) => `${name}${DEAD_LETTER_QUEUE_SUFFIX}`);
  }

  private model(): ChannelModel {
    const model = this.connection.model;
    if (!model) throw new Error(`not connected to the broker at ${this.connection.redactedUrl}`);
    return model;
  }
}

function checkLimit(limit: number | undefined): number {
  const value = limit ?? DEFAULT_DEAD_LETTER_LIMIT;
  if (!Number.isInteger(value) || value < 1 || value > MAX_DEAD_LETTER_LIMIT) {
    throw new InvalidDeadLetterQueryError(
      `'limit' must be an integer from 1 to ${MAX_DEAD_LETTER_LIMIT}, got ${String(limit)}`,
    );
  }
  return value;
}

function requireSelection(action: string, selection: DeadLetterSelection): void {
  const { all, ...filter } = selection;
  if (!narrowsSelection(filter) && all !== true) {
    throw new InvalidDeadLetterQueryError(
      `a ${action} needs a selection: message ids, a filter (error class, type, reason, time window, text), or 'all' for every dead letter of the queue(s)`,
    );
  }
}

function describeSelection(selection: DeadLetterSelection, limit: number): Record<string, unknown> {
  const described: Record<string, unknown> = { limit };
  for (const [key, value] of Object.entries(selection)) {
    if (value !== undefined) described[key] = value instanceof Date ? value.toISOString() : value;
  }
  return described;
}
