import type { ConsumeMessage } from 'amqplib';
import type { EntityManager } from 'typeorm';
import type { Envelope } from '../envelope/envelope';
import type { MessageContext } from '../context/message-context';
import type { HandlerDeadline } from '../flow-control/handler-deadline';

/** The abort controller of one attempt, made on first use: most handlers never look at their signal. */
export interface AttemptAbort {
  controller?: AbortController;
}

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
    return (this.attemptAbort.controller ??= new AbortController()).signal;
  }

  get deadline(): Date | undefined {
    return this.source.deadline?.deadline;
  }

  extendDeadline(ms: number): Date | undefined {
    return this.source.deadline?.extend(ms);
  }
}
