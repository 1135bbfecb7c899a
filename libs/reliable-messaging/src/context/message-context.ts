import type { ConsumeMessage } from 'amqplib';
import type { EntityManager } from 'typeorm';
import type { Envelope } from '../envelope/envelope';

/** What a handler knows about the message it is handling; passed as the handler's second argument. */
export interface MessageContext {
  /** Ids, type, version, timestamps, trace context and headers. */
  readonly envelope: Envelope;
  /** 1 for the first attempt; counted by this module in the message's own headers. */
  readonly attempt: number;
  /** The broker's redelivered flag: an earlier delivery may have been handled without its ack reaching the broker. */
  readonly redelivered: boolean;
  /** The queue the message came from. */
  readonly queue: string;
  /** The consumer's name, `Class.method`. */
  readonly consumer: string;
  /** The raw delivery, for what the envelope doesn't cover. */
  readonly raw: ConsumeMessage;
  /** Aborted when the handler's deadline passes or the process is shutting down past its deadline. */
  readonly signal: AbortSignal;
  /** When the handler's deadline passes: `signal` aborts then and the attempt counts as failed and is retried. */
  readonly deadline: Date | undefined;
  /**
   * Leaves the handler at least `ms` more from now, for a long handler that is still making progress; never
   * past the consumer timeout less its margin. Returns the new deadline.
   */
  extendDeadline(ms: number): Date | undefined;
  /** The transaction the handler's writes must join for dedup and outbox to commit together, when one is open. */
  readonly manager?: EntityManager;
}
