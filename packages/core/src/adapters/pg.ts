import type { Pool, PoolClient } from 'pg';
import { InvalidTransactionError } from '../transactions/invalid-transaction-error';
import type {
  SqlQueryOptions,
  SqlResult,
  SqlTransaction,
  TransactionAdapter,
} from '../transactions/types';
import { pgClientState } from './pg-status';

/**
 * Checkouts whose {@link withTransaction} has ended, by their `release` function: pg-pool
 * hands the same client object out again but gives each checkout a new `release`. This only
 * names why an idle client is refused; the server's status decides.
 */
const ENDED = new WeakSet<object>();

function isPgClient(value: unknown): value is PoolClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { query?: unknown }).query === 'function' &&
    typeof (value as { getTransactionStatus?: unknown }).getTransactionStatus === 'function'
  );
}

function enterPg(client: PoolClient): SqlTransaction {
  if (!isPgClient(client)) {
    throw new InvalidTransactionError(
      'pg',
      'not-a-transaction',
      'expected a pg client with an open transaction (pool.connect(), then BEGIN), not a pool',
    );
  }
  // A pending reply (undefined) is let through: the statement then queues behind it.
  const state = pgClientState(client);
  if (state === 'failed') {
    throw new InvalidTransactionError('pg', 'failed', 'a statement failed in the transaction');
  }
  if (state === 'idle') {
    const ended = ENDED.has(client.release);
    throw new InvalidTransactionError(
      'pg',
      ended ? 'finished' : 'not-in-transaction',
      ended ? 'the transaction has already ended' : 'no transaction is open on the client',
    );
  }
  return {
    dialect: 'postgres',
    async query(text: string, values: readonly unknown[], options?: SqlQueryOptions) {
      // The (text, values) form spares node-postgres a copy of a config object per statement.
      const result =
        options?.name === undefined
          ? await client.query<Record<string, unknown>>(text, values as unknown[])
          : await client.query<Record<string, unknown>>({
              text,
              values: [...values],
              name: options.name,
            });
      return {
        rows: result.rows,
        rowCount: result.rowCount ?? result.rows.length,
      } satisfies SqlResult;
    },
    state: () => pgClientState(client),
  };
}

/**
 * Runs `work` in a transaction on a client of `pool`: BEGIN, then COMMIT, or ROLLBACK and
 * rethrow when `work` throws. The client goes back to the pool either way; one that could
 * not roll back, or is somehow still in a transaction, is released with an error, so the
 * pool destroys it instead of handing it out mid-transaction.
 *
 * @example
 * ```ts
 * await withTransaction(pool, async (client) => {
 *   await client.query('insert into orders (id) values ($1)', [id]);
 * });
 * ```
 */
export async function withTransaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  const checkout = client.release;
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    let result: T;
    try {
      result = await work(client);
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      }
      throw error;
    }
    await client.query('COMMIT');
    return result;
  } finally {
    ENDED.add(checkout);
    // Not known to be idle (e.g. COMMIT failed and the status after it is still on its way):
    // never hand it out again.
    if (broken === undefined && pgClientState(client) !== 'idle') {
      broken = new Error('pg: the client is not known to be idle after COMMIT or ROLLBACK');
    }
    client.release(broken);
  }
}

/**
 * The adapter for node-postgres: justonce opens transactions with {@link withTransaction} on
 * `pool`, and a handler receives the transaction's `PoolClient`. A client passed to
 * `outbox.add` must have a transaction open (`BEGIN`), and no failed statement in it.
 *
 * @example
 * ```ts
 * const pool = new Pool({ connectionString });
 * const inbox = createInbox({ store, consumer: 'billing', transactions: pgTransactions(pool) });
 * await inbox.process(envelope, async ({ trx }) => trx.query('insert into bills …', [id]));
 * ```
 */
export function pgTransactions(pool: Pool): TransactionAdapter<PoolClient> {
  return {
    library: 'pg',
    transaction: <T>(work: (client: PoolClient) => Promise<T>) => withTransaction(pool, work),
    enter: enterPg,
  };
}
