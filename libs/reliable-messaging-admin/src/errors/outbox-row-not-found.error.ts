/** No parked outbox row has that row id or message id. The admin API answers it with 404. */
export class OutboxRowNotFoundError extends Error {
  override readonly name = 'OutboxRowNotFoundError';
  constructor(readonly id: string) {
    super(`no parked outbox row with row id or message id '${id}'`);
  }
}
