/**
 * Reliable messaging over RabbitMQ for NestJS, imported as `nestjs-reliable-messaging`: what an application touches
 * to consume, publish and run. The rest has its own entry point:
 *
 * - `nestjs-reliable-messaging/typeorm`: the outbox, scheduled messages, inbox, idempotency-key and claim-check
 *   entities and their migrations;
 * - `nestjs-reliable-messaging/operations`: monitors, stats, connections and the names of the broker objects the
 *   module declares, for operators' scripts and harnesses, and what operator tooling builds on;
 * - `nestjs-reliable-messaging/testing`: fault points for tests that must stop the module at an exact moment;
 * - `nestjs-reliable-messaging/safe-json`: the decoder's strict UTF-8 and a JSON parser with limits, for HTTP bodies.
 *
 * The operator's tools (the `dlq` command line, the HTTP admin API and console, and the dead-letter and outbox
 * operations) are a package of their own, `nestjs-reliable-messaging-admin`.
 */

/** The module: `ReliableMessagingModule.forRoot(options)` or `forRootAsync(...)` in the app's root module. */
export { ReliableMessagingModule } from './reliable-messaging.module';
/** The module's options, and the queue type consumers get unless they choose another. */
export type { ReliableMessagingModuleOptions, QueueType } from './options/reliable-messaging.options';
/** The transactional outbox's options (`outbox` in the module's options). */
export type { OutboxOptions } from './options/outbox.options';
/** The inbox's options (`inbox`): how long handled message ids are kept, how often they are pruned. */
export type { InboxOptions } from './options/inbox.options';
/**
 * A retry policy (module-wide `retry`, or per consumer). A consumer's other option types are
 * `ConsumeOptions['rateLimit']` and `ConsumeOptions['ordering']`.
 */
export type { RetryOptions } from './options/retry.options';
/** The shape a JSON body may have (the module's `jsonLimits`); the parsers and defaults are in `/safe-json`. */
export type { JsonLimits } from './options/json-limits.options';

/** Marks a provider method as the handler of a queue. */
export { Consume } from './decorators/consume.decorator';
export type { ConsumeOptions } from './options/consume.options';
/** Publishes a method's return value through the outbox (or directly) once the method has returned. */
export { Publish, type PublishDecoratorOptions } from './decorators/publish.decorator';
/** Names and versions a message class, and sets how its payload is validated. */
export { MessageType, type MessageTypeOptions } from './decorators/message-type.decorator';

/**
 * Sagas (docs/sagas.md): `@Saga()` declares a provider whose `@SagaStep()` methods start, continue and complete
 * instances kept in the module's database, found by a correlation key each message carries.
 */
export { Saga } from './saga/saga.decorator';
export { SagaStep } from './saga/saga-step.decorator';
export type {
  SagaOptions,
  SagaStepOptions,
  SagaMissingPolicy,
  SagaCompletedPolicy,
} from './options/saga.options';
/** What a saga step receives beside its message: the instance's state, `complete()`, and the message's context. */
export type { SagaContext } from './saga/saga-context';
/** Reads saga instances (state, version, status, history) and prunes completed ones. */
export {
  SagaInstances,
  type SagaInstanceView,
  type SagaInstanceSummary,
  type SagaListOptions,
  type SagaHistoryEntry,
} from './saga/saga-instances.service';
/** An instance's status, and what one message did to it in its history. */
export type { SagaStatus, SagaOutcome, SagaTimeout } from './saga/saga-store';

/** What a handler receives beside the payload: ids, attempt, headers, the transaction's manager. */
export type { MessageContext } from './context/message-context';
/** A message as it travels: payload and the envelope's fields (docs/envelope.md). */
export type { Envelope } from './envelope/envelope';
/** The envelope's header names, for clients that publish or read messages without the module. */
export { HEADERS } from './reliable-messaging.constants';
/** The context type handlers run under, for guards, interceptors and filters (`host.getType() === 'rmq'`). */
export { RMQ_CONTEXT_TYPE } from './reliable-messaging.constants';
/** Discards a message that is not newer than the state a handler holds, and counts the discard. */
export { VersionGuard, type VersionCheck } from './ordering/version-guard.service';
/**
 * A text without the credentials it quotes (URL userinfo, `password=`-style values, `Authorization` values): what
 * the module applies to every error text it logs or writes into a header, for the app's own logs.
 */
export { scrubCredentials } from './util/scrub-credentials';

/** The injectable publisher: `publish()` in the caller's transaction (outbox) or with a broker confirm. */
export { MessagePublisher, type PublishReceipt } from './publishing/message-publisher.service';
/** What `publish()` takes: per-message options, and a raw message for clients of other envelopes. */
export type { PublishOptions, RawMessage } from './publishing/publish-options';
/**
 * The messages published with `deliverAt` or `delayMs` and not yet due: `cancel({ messageId })` or
 * `cancel({ idempotencyKey })` until they are due, their count and lateness, a listing (docs/scheduling.md).
 */
export {
  ScheduledMessages,
  type CancelOptions,
  type ScheduledListOptions,
} from './scheduling/scheduled-messages.service';
export type { CancelTarget } from './scheduling/cancel-target';
export type {
  ScheduledBacklog,
  ScheduledRow,
  ScheduledListFilter,
} from './scheduling/scheduled-store.service';
/** What `request()` takes: the publish options without `manager`, a required `timeoutMs` and an abort signal. */
export type { RequestOptions } from './request-reply/request-options';

/** Thrown by a handler: the failure is permanent, so the message is dead-lettered at once. */
export { NonRetryableError } from './errors/non-retryable.error';
/** The handler ran past its consumer's deadline; the attempt is abandoned and retried. */
export { HandlerDeadlineExceededError } from './errors/handler-deadline-exceeded.error';
/** A handler settled its message by hand (`ctx.getChannelRef().ack()`): dead-lettered at once, never retried. */
export { ManualSettlementError } from './errors/manual-settlement.error';
/** A guard or a pipe refused the message before its handler ran: dead-lettered at once with the refusal. */
export { MessageRefusedError } from './errors/message-refused.error';
/** A saga step refused its message for good (bad correlation key, missing or completed instance, bad state). */
export { SagaRefusedError, type SagaRefusal } from './errors/saga-refused.error';
/** A saga step lost the race for its instance more times than its saga's `maxConflictReruns`; retried as any failure. */
export { SagaConflictError } from './errors/saga-conflict.error';
/** A message came back more times than the redelivery limit allows: the process keeps dying on it. */
export { RedeliveryLimitError } from './errors/redelivery-limit.error';
/** A message that cannot be decoded or fails validation, and why. */
export {
  InvalidMessageError,
  type InvalidMessageReason,
  type JsonLimitReason,
} from './errors/invalid-message.error';
/** An option is wrong, or the broker cannot hold the declared topology: thrown at startup, saying how to fix it. */
export { ConfigurationError } from './errors/configuration.error';
/** `publish()` with an outbox, called outside any transaction: nothing for the message to commit with. */
export { NoTransactionError } from './errors/no-transaction.error';
/** `request()` got no reply within its timeoutMs; the request expired in the broker too. */
export { RequestTimeoutError } from './errors/request-timeout.error';
/** `request()` was waiting when its reply channel closed (connection lost, shutdown): its reply cannot arrive. */
export { RequestInterruptedError } from './errors/request-interrupted.error';
/** The responder's handler failed a request for good: its error's name and message, never its stack. */
export { RemoteHandlerError } from './errors/remote-handler.error';
/** A publish failed; the subclasses say how. */
export {
  PublishError,
  PublishRejectedError,
  PublishTimeoutError,
  PayloadTooLargeError,
  UnroutableMessageError,
} from './errors/publish.error';
