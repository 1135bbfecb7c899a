import type { Pool, PoolClient } from 'pg';

/**
 * Runs `work` in a transaction on a connection of `pool`, as the hand-written code does everywhere: BEGIN, the
 * work, COMMIT; ROLLBACK when anything fails. A connection that cannot even roll back is thrown away rather than
 * handed to the next caller mid-transaction.
 *
 * NOTE: a failed COMMIT has already ended the transaction, and ROLLBACK then only warns.
 */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let reusable = true;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    reusable = await client.query('ROLLBACK').then(
      () => true,
      () => false,
    );
    throw error;
  } finally {
    client.release(!reusable);
  }
}
