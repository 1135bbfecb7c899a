import type { DataSource, EntityManager } from 'typeorm';
import { ConfigurationError } from '../errors/configuration.error';
import { NoTransactionError } from '../errors/no-transaction.error';
import type { TransactionContext } from './transaction-context.service';

/**
 * The transaction a `publish()` of `type` writes its rows in: `manager`'s, which must be inside a transaction,
 * else the current one (nestjs-cls' active transaction, else the handled message's). Refuses with
 * NoTransactionError when there is none, rather than write a message whose state change may still roll back, and
 * with a ConfigurationError when it belongs to another DataSource than the module's.
 */
export async function writingTransaction(
  type: string,
  manager: EntityManager | undefined,
  transactions: TransactionContext,
  dataSource: DataSource | undefined,
): Promise<EntityManager> {
  const target = manager ?? (await transactions.currentManager());
  if (!target) throw new NoTransactionError(type);
  if (manager) {
    const runner = manager.queryRunner;
    if (!runner || runner.isReleased || !runner.isTransactionActive) {
      throw new NoTransactionError(
        type,
        'the EntityManager passed as { manager } is not inside a transaction',
      );
    }
  }
  if (target.connection !== dataSource) {
    throw new ConfigurationError(
      `publish() of '${type}': the transaction belongs to another DataSource than the module's dataSource option, ` +
        'so the message could not commit with it; publish inside a transaction of that DataSource',
    );
  }
  return target;
}
