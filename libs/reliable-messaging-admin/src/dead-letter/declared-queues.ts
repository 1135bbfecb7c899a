/**
 * Injection token of the consumer queues a tool process may act on besides its app's own `@Consume()` queues: a
 * process that loads no consumers (the package's `dlq` bin, from `RM_QUEUES`) names its app's queues here. The
 * dead-letter tools act on these queues' dead-letter queues and on no other queue of the broker.
 */
export const DECLARED_DEAD_LETTER_QUEUES = Symbol('DECLARED_DEAD_LETTER_QUEUES');
