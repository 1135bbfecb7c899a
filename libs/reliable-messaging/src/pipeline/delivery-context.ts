import type { ConsumeMessage } from 'amqplib';
import type { EntityManager } from 'typeorm';
import type { Envelope } from '../envelope/envelope';
import type { MessageContext } from '../context/message-context';
import type { HandlerDeadline } from '../flow-control/handler-deadline';
import { ManualSettlementError, type ManualSettlementCall } from '../errors/manual-settlement.error';
import type { AttemptAbort } from './attempt-abort';

/**
 * What `getChannelRef()` hands a handler written for Nest's RMQ transport: a channel whose settling methods
 * throw ManualSettlementError, since the module settles every message itself.
 */
export type SettlementRefusingChannel = Readonly<Record<ManualSettlementCall, (...args: unknown[]) => never>>;

/** What the context reads from its delivery while the handler runs. */
interface DeadlineSource {
  readonly deadline?: HandlerDeadline;
}

/**
 * The MessageContext of one attempt, as a class rather than an object literal with closures: it is made for
 * every delivery, and its getters then live once on the prototype. It keeps the attempt's abort controller
 * (a later attempt gets a new context) and reads the delivery's current deadline, which `extend()` moves.
 */
export class DeliveryContext implements MessageContext {
  readonly redelivered: boolean;
  /** Set when the user's method is entered: Nest's guards, interceptors and pipes let the message through. */
  handlerEntered = false;
  /** How the user's method ended, once it has: what an exception filter's outcome is judged against. */
  handlerOutcome?: { failed: false } | { failed: true; error: unknown };

  constructor(
    readonly envelope: Envelope,
    readonly attempt: number,
    readonly queue: string,
    readonly consumer: string,
    readonly raw: ConsumeMessage,
    readonly manager: EntityManager | undefined,
    private readonly attemptAbort: AttemptAbort,
    private readonly source: DeadlineSource,
  ) {
    this.redelivered = raw.fields.redelivered;
  }

  get signal(): AbortSignal {
    return this.attemptAbort.signal;
  }

  get deadline(): Date | undefined {
    return this.source.deadline?.deadline;
  }

  extendDeadline(ms: number): Date | undefined {
    return this.source.deadline?.extend(ms);
  }

  /** As Nest's `RmqContext.getMessage()`: the raw delivery (`raw`). */
  getMessage(): ConsumeMessage {
    return this.raw;
  }

  /** As Nest's `RmqContext.getPattern()`: the message's type, which is what the consumer is bound to. */
  getPattern(): string {
    return this.envelope.type;
  }

  /**
   * As Nest's `RmqContext.getChannelRef()`, for handlers migrated from its RMQ transport: a channel whose
   * `ack`, `nack`, `reject`, `ackAll` and `nackAll` throw ManualSettlementError. The module settles the message
   * after the handler returns; a handler that settles it too is dead-lettered at once, `manual-settlement`,
   * never retried (startup refuses a handler whose own code does it, see consuming/manual-settlement.ts).
   */
  getChannelRef(): SettlementRefusingChannel {
    const refuse = (call: ManualSettlementCall) => (): never => {
      throw new ManualSettlementError(this.consumer, call);
    };
    return Object.freeze({
      ack: refuse('ack'),
      nack: refuse('nack'),
      reject: refuse('reject'),
      ackAll: refuse('ackAll'),
      nackAll: refuse('nackAll'),
    });
  }

  /** As Nest's `RmqContext.getArgs()`: the message, the channel and the pattern. */
  getArgs(): [ConsumeMessage, SettlementRefusingChannel, string] {
    return [this.getMessage(), this.getChannelRef(), this.getPattern()];
  }

  /** As Nest's `RmqContext.getArgByIndex()`. */
  getArgByIndex(index: number): unknown {
    return this.getArgs()[index];
  }
}
