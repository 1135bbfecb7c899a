import { createHash } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import type { ChannelModel, ConsumeMessage, GetMessage } from 'amqplib';
import { HEADERS, UnroutableMessageError } from 'nestjs-reliable-messaging';
import {
  ClaimCheckReader,
  ConfirmPublisher,
  ConsumerConnection,
  consumerQueueOf,
  ConsumerRegistry,
  DEAD_LETTER_QUEUE_SUFFIX,
  type DeadLetter,
  DeadLetterClaimCheck,
  errorMessage,
  moduleOwnedQueues,
  payloadValidator,
  RESOLVED_MESSAGING_OPTIONS,
  type ResolvedMessagingOptions,
} from 'nestjs-reliable-messaging/operations';
import { parseJsonBody } from 'nestjs-reliable-messaging/safe-json';
import { DeadLetterNotFoundError } from '../errors/dead-letter-not-found.error';
import { EmptySelectionError } from '../errors/empty-selection.error';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { DeadLetterAudit } from '../audit/dead-letter-audit.service';
import type { DeadLetterFilter } from './dead-letter-filter';
import {
  DEFAULT_MAX_READ_BYTES,
  NO_MESSAGE_ID,
  type DeadLetterListOptions,
  type DeadLetterListResult,
  type DeadLetterReasonCount,
  type DeadLetterOperationOptions,
  type DeadLetterOperationResult,
} from './dead-letter-operation';
import type { DeadLetterReader } from './dead-letter-reader';
import { scanDeadLetters, type DeadLetterScanResult, type DeadLetterVisit } from './dead-letter-scan';
import {
  checkLimit,
  describeSelection,
  requireSelection,
  type DeadLetterSelection,
} from './dead-letter-selection';
import { summarizeDeadLetter, type DeadLetterSummary } from './dead-letter-summary';
import { DECLARED_DEAD_LETTER_QUEUES } from './declared-queues';
import { checkEditedBody } from './edited-body';
import { replayMessage } from './replay-message';

/** The longest reason a count keeps as it is; a longer one (a publisher wrote it) is cut. */
const MAX_REASON_LENGTH = 200;

/** A read budget: the default when none is given; refused unless a positive whole number of bytes. */
function checkMaxReadBytes(maxReadBytes: number | undefined): number {
  const value = maxReadBytes ?? DEFAULT_MAX_READ_BYTES;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new InvalidDeadLetterQueryError(
      `'maxReadBytes' must be a positive integer, got ${String(maxReadBytes)}`,
    );
  }
  return value;
}

/**
 * The operations on dead letters that the command line and the admin API share: list with filters, show one,
 * replay (one, a filtered set, a time window), edit a body and replay it, purge. Each reads the dead-letter
 * queues with a DeadLetterReader (nothing is lost or reordered: only what is replayed or purged is removed);
 * each can be a dry run; each replay, edit and purge is audited. Replays are confirmed by the broker before
 * their dead letter is removed. A replay or purge that matches nothing throws EmptySelectionError (audited as
 * failed) unless `allowEmpty` is set.
 *
 * What a publisher wrote is never trusted to route or delete: the operations read only this app's dead-letter
 * queues (a `queue` that is not one of its consumers' is refused before the broker is asked), a replay goes to
 * the consumer queue of the dead-letter queue the message sits in (never a header's), and no operation deletes a
 * stored body. A plain replay of a claim-checked dead letter gives the replayed message a fresh copy of its body
 * (DeadLetterClaimCheck.copyForReplay); the dead letter's own copy is left to the pruner, which keeps it while any
 * dead letter refers to it.
 */
@Injectable()
export class DeadLetterOperations {
  constructor(
    private readonly connection: ConsumerConnection,
    private readonly registry: ConsumerRegistry,
    private readonly publisher: ConfirmPublisher,
    private readonly audit: DeadLetterAudit,
    private readonly claimCheckReader: ClaimCheckReader,
    private readonly claimCheckCopies: DeadLetterClaimCheck,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    @Optional()
    @Inject(DECLARED_DEAD_LETTER_QUEUES)
    private readonly declaredQueues: readonly string[] = [],
  ) {}

  /**
   * The consumer queues of this app (each lane's queue for a consumer with lanes), each with a dead-letter queue
   * `<queue>.dlq`, the module's own (the republish queue of scheduled messages without an outbox), and those a
   * tool process declared (DECLARED_DEAD_LETTER_QUEUES): the only queues the operations act on.
   */
  knownQueues(): string[] {
    const own = this.registry.discoveredConsumers.map((consumer) => consumer.queue);
    return [...new Set([...own, ...moduleOwnedQueues(this.options), ...(this.declaredQueues ?? [])])];
  }

  /**
   * Dead letters matching the filter, oldest first, up to `limit` (default 1000), without their bodies: each
   * body is let go as soon as it is read, and the read stops at `maxReadBytes` (default 64 MiB).
   */
  async list(filter: DeadLetterFilter, options: DeadLetterListOptions = {}): Promise<DeadLetterListResult> {
    const limit = checkLimit(options.limit);
    const deadLetters: DeadLetterSummary[] = [];
    const scan = await this.scan(
      filter,
      limit,
      options.onProgress,
      async (_reader, _message, deadLetter) => {
        deadLetters.push(summarizeDeadLetter(deadLetter));
        return true;
      },
      checkMaxReadBytes(options.maxReadBytes),
    );
    return { deadLetters, ...scan };
  }

  /**
   * The dead letters matching the filter counted by reason, oldest first, up to `limit`, keeping nothing of
   * them but the count, and within `maxReadBytes` (default 64 MiB) as a list.
   */
  async countReasons(
    filter: DeadLetterFilter,
    options: DeadLetterListOptions = {},
  ): Promise<DeadLetterReasonCount> {
    const counts = new Map<string, number>();
    let counted = 0;
    const scan = await this.scan(
      filter,
      checkLimit(options.limit),
      options.onProgress,
      async (_reader, _message, { reason }) => {
        // A publisher writes the reason: a bounded key keeps a forged one from growing the count.
        const key = reason.length > MAX_REASON_LENGTH ? `${reason.slice(0, MAX_REASON_LENGTH)}…` : reason;
        counts.set(key, (counts.get(key) ?? 0) + 1);
        counted++;
        return true;
      },
      checkMaxReadBytes(options.maxReadBytes),
    );
    const reasons = [...counts]
      .map(([reason, count]) => ({ reason, count }))
      .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
    return { reasons, counted, ...scan };
  }

  /**
   * One dead letter by message id, searched in `queue`'s dead-letter queue or in all of them; a claim-checked
   * one with its whole message in `fullBody` when the store has it (a store that cannot be reached, or a body
   * that is gone, leaves it out rather than fail the read). The only read that keeps a body: the one found.
   */
  async show(messageId: string, queue?: string): Promise<DeadLetter> {
    let deadLetter: DeadLetter | undefined;
    await this.scan({ queue, messageIds: [messageId] }, 1, undefined, async (_reader, _message, found) => {
      deadLetter = found;
      return false;
    });
    if (!deadLetter) throw new DeadLetterNotFoundError(messageId, this.deadLetterQueues(queue));
    if (deadLetter.headers[HEADERS.claimCheck] !== undefined) {
      deadLetter.fullBody = await this.claimCheckReader
        .resolve({
          content: deadLetter.body,
          properties: deadLetter.properties,
          fields: {},
        } as ConsumeMessage)
        .catch(() => undefined);
    }
    return deadLetter;
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
   * Replaces the body of one dead letter and replays it. A JSON message's new body must be valid JSON and valid
   * for the message class of the queue's consumer (checked as consumers check it), and within the payload limit.
   */
  async editAndReplay(
    queue: string,
    messageId: string,
    body: Buffer,
    options: Omit<DeadLetterOperationOptions, 'limit'>,
  ): Promise<DeadLetterOperationResult & { before: DeadLetter }> {
    if (!queue) throw new InvalidDeadLetterQueryError("an edit needs the message's 'queue'");
    const before = await this.show(messageId, queue);
    checkEditedBody(before, body, this.options.maxPayloadBytes, this.options.jsonLimits);
    await this.checkAgainstMessageClass(before, body);
    const digest = (data: Buffer) => createHash('sha256').update(data).digest('hex');
    const details = {
      bodySha256Before: digest(before.fullBody ?? before.body),
      bodySha256After: digest(body),
    };
    const replayedAt = new Date();
    const result = await this.operate(
      'edit-replay',
      { queue, messageIds: [messageId] },
      { ...options, limit: 1 },
      async (reader, message, deadLetter, outcome) => {
        const published = await this.publishReplay(deadLetter, replayedAt, outcome, body);
        if (published !== 'published') return published;
        return this.remove(reader, message, deadLetter, outcome, 'replayed');
      },
      details,
    ).catch((error: unknown) => {
      // Gone between the show and the edit (replayed or purged meanwhile).
      if (error instanceof EmptySelectionError)
        throw new DeadLetterNotFoundError(messageId, this.deadLetterQueues(queue));
      throw error;
    });
    return { ...result, before };
  }

  /**
   * Removes the selected dead letters for good. A claim-checked one's stored body stays: its reference is a header
   * anyone could have written, and another message may need the body. The pruner deletes it once it has expired
   * and no dead letter refers to it.
   */
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
    action: DeadLetterOperationResult['action'],
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
            result.messageIds.push(deadLetter.messageId ?? NO_MESSAGE_ID);
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
    const empty = result.messageIds.length + result.failures.length === 0 && options.allowEmpty !== true;
    if (record) {
      await this.audit.finish(record, {
        messageIds: result.messageIds,
        outcome: empty ? 'failed' : 'completed',
        details: empty
          ? { error: 'the selection matched no dead letter' }
          : result.failures.length > 0
            ? { failures: result.failures }
            : {},
      });
    }
    if (empty) throw new EmptySelectionError(action, record?.id);
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
      // A plain replay's message gets a body of its own: it may wait in a retry delay long after its dead letter
      // (and whatever that refers to) is gone.
      const claimCheck =
        body === undefined
          ? await this.claimCheckCopies.copyForReplay(deadLetter.headers, deadLetter.type)
          : undefined;
      await this.publisher.publish(replayMessage(deadLetter, replayedAt, body, claimCheck));
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
      result.messageIds.push(deadLetter.messageId ?? NO_MESSAGE_ID);
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

  /**
   * Refuses an edited body that the consumer of the dead letter's queue would refuse by its message class
   * (class-validator, as the decode stage runs it), with the class's own validation message. Without a consumer
   * of that queue in this process (a tool that loads no consumers) the body cannot be checked, so it is refused.
   */
  private async checkAgainstMessageClass(deadLetter: DeadLetter, body: Buffer): Promise<void> {
    const consumer = this.registry.discoveredConsumers.find((plan) => plan.queue === deadLetter.queue);
    if (!consumer) {
      throw new InvalidDeadLetterQueryError(
        `no consumer of '${deadLetter.queue}' is loaded here, so the new body cannot be checked against its message class; edit from the app's own tools (its command line or admin API)`,
      );
    }
    if (!consumer.messageClass) return;
    try {
      await payloadValidator(consumer.messageClass)(parseJsonBody(body, this.options.jsonLimits));
    } catch (error) {
      throw new InvalidDeadLetterQueryError(
        `the new body is not accepted by ${consumer.name} (${consumer.messageClass.name}): ${errorMessage(error)}`,
      );
    }
  }

  /** Scans the filter's dead-letter queues (see scanDeadLetters). */
  private async scan(
    filter: DeadLetterFilter,
    limit: number,
    onProgress: DeadLetterOperationOptions['onProgress'],
    visit: DeadLetterVisit,
    maxReadBytes?: number,
  ): Promise<DeadLetterScanResult> {
    const model = this.model();
    const queues = this.deadLetterQueues(filter.queue);
    return scanDeadLetters(model, queues, filter, limit, onProgress, visit, maxReadBytes);
  }

  /**
   * The dead-letter queues to read: the named one, every lane's when it names a consumer with lanes, else all.
   * Only this app's: any other queue is refused before the broker is asked, naming the queues it may read.
   */
  private deadLetterQueues(queue?: string): string[] {
    const known = this.knownQueues();
    if (queue !== undefined) {
      const lanes = this.registry.discoveredConsumers.filter(
        (consumer) => consumer.lane?.baseQueue === queue,
      );
      if (lanes.length > 0) return lanes.map((lane) => lane.deadLetterQueue);
      const consumerQueue = consumerQueueOf(queue);
      if (!known.includes(consumerQueue)) {
        throw new InvalidDeadLetterQueryError(
          known.length === 0
            ? `'${queue}' is not a queue of this app: it has no @Consume() handlers (a tool without the app's code names the app's queues in RM_QUEUES)`
            : `'${queue}' is not a queue of this app; its queues are: ${known.join(', ')}`,
        );
      }
      return [`${consumerQueue}${DEAD_LETTER_QUEUE_SUFFIX}`];
    }
    if (known.length === 0) {
      throw new InvalidDeadLetterQueryError(
        'this app has no @Consume() handlers (a tool without the app’s code names the app’s queues in RM_QUEUES)',
      );
    }
    return known.map((name) => `${name}${DEAD_LETTER_QUEUE_SUFFIX}`);
  }

  private model(): ChannelModel {
    const model = this.connection.model;
    if (!model) throw new Error('not connected to the broker; reconnecting');
    return model;
  }
}
