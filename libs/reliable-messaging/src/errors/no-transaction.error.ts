/**
 * `publish()` was called with an outbox configured but outside any transaction, so there is nothing for the
 * message to commit with. The message says the ways out: open a transaction, pass one, or send at once.
 */
export class NoTransactionError extends Error {
  override readonly name = 'NoTransactionError';
  constructor(messageType: string, problem = 'no transaction is open') {
    super(
      `publish() of '${messageType}' writes the message to the outbox inside the caller's transaction, but ${problem}. ` +
        'Call it inside a transaction: a @Transactional() method or txHost.withTransaction() (nestjs-cls), a @Consume() ' +
        'handler with dedup on, or pass { manager } from dataSource.transaction(). To send at once with no transaction, ' +
        'call publishNow().',
    );
  }
}
