/** No dead letter with that message id is in the dead-letter queue(s) searched. The admin API answers it with 404. */
export class DeadLetterNotFoundError extends Error {
  override readonly name = 'DeadLetterNotFoundError';
  constructor(
    readonly messageId: string,
    readonly deadLetterQueues: string[],
  ) {
    super(
      `no dead letter with message id '${messageId}' in ${deadLetterQueues.join(', ') || 'any dead-letter queue'}`,
    );
  }
}
