import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import { InvalidTransactionError } from '../transactions/invalid-transaction-error';
import type { SqlResult, SqlTransaction, TransactionAdapter } from '../transactions/types';

/**
 * Transactions this adapter opened, and whether each has ended: Kysely keeps that private
 * (only a `ControlledTransaction` says so publicly).
 */
const OPENED = new WeakMap<object, { ended: boolean }>();

function isKyselyTransaction(value: unknown): value is Transaction<unknown> {
  try {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as { isTransaction?: unknown }).isTransaction === true &&
      typeof (value as { executeQuery?: unknown }).executeQuery === 'function' &&
      typeof (value as { withoutPlugins?: unknown }).withoutPlugins === 'function'
    );
  } catch {
    return false;
  }
}

/**
 * True when the adapter saw `tx` end, or it is a `ControlledTransaction` (from
 * `startTransaction()`) that has committed or rolled back.
 */
function hasEnded(tx: object): boolean {
  const controlled = tx as { isCommitted?: unknown; isRolledBack?: unknown };
  return (
    OPENED.get(tx)?.ended === true ||
    controlled.isCommitted === true ||
    controlled.isRolledBack === true
  );
}

function enterKysely<DB>(tx: Transaction<DB>): SqlTransaction {
  if (!isKyselyTransaction(tx)) {
    throw new InvalidTransactionError(
      'kysely',
      'not-a-transaction',
      'expected a kysely transaction (the argument of db.transaction().execute(async (trx) => …)), not the Kysely instance',
    );
  }
  if (hasEnded(tx)) {
    throw new InvalidTransactionError('kysely', 'finished', 'the transaction has already ended');
  }
  // Plugins (CamelCasePlugin, withSchema) would rewrite justonce's result rows: run without.
  const raw = tx.withoutPlugins();
  return {
    dialect: 'postgres',
    async query(text: string, values: readonly unknown[]): Promise<SqlResult> {
      let result;
      try {
        result = await raw.executeQuery(CompiledQuery.raw(text, [...values]));
      } catch (error) {
        throw finishedOr(error);
      }
      const rows = result.rows as Record<string, unknown>[];
      return { rows, rowCount: rowCountOf(result, rows) };
    },
    // Kysely exposes no public way to the connection's transaction status.
    state: () => (hasEnded(tx) ? 'idle' : undefined),
  };
}

/**
 * Kysely refuses, before any SQL, a statement on a transaction of `db.transaction().execute()`
 * that has ended, with a plain `Error`: the one way to learn that of a transaction the
 * adapter did not open. Anything else passes unchanged.
 */
function finishedOr(error: unknown): unknown {
  const message = error instanceof Error ? error.message : '';
  return /^Transaction is already (committed|rolled back)/.test(message)
    ? new InvalidTransactionError('kysely', 'finished', 'the transaction has already ended')
    : error;
}

/**
 * The affected rows as the dialect reports them: `numAffectedRows` (PostgresDialect, for
 * INSERT/UPDATE/DELETE/MERGE), or `affectedRows`, which kysely-pglite passes through from
 * PGlite's result unchanged, else the number of rows returned.
 */
function rowCountOf(result: { numAffectedRows?: bigint }, rows: readonly unknown[]): number {
  if (result.numAffectedRows !== undefined) return Number(result.numAffectedRows);
  const affected = (result as { affectedRows?: unknown }).affectedRows;
  return typeof affected === 'number' && affected > 0 ? affected : rows.length;
}

/**
 * The adapter for Kysely (0.28 or later): justonce opens transactions with
 * `db.transaction().execute(…)`, and a handler receives Kysely's `Transaction<DB>`. For
 * `PostgresDialect` on node-postgres. Not for kysely-pglite on a PGlite the store shares: its
 * transactions do not take PGlite's lock, so the store's own statements could run inside them.
 *
 * @example
 * ```ts
 * const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
 * const inbox = createInbox({ store, consumer: 'billing', transactions: kyselyTransactions(db) });
 * await inbox.process(envelope, async ({ trx }) => trx.insertInto('bills').values(bill).execute());
 * ```
 */
export function kyselyTransactions<DB>(db: Kysely<DB>): TransactionAdapter<Transaction<DB>> {
  return {
    library: 'kysely',
    async transaction<T>(work: (tx: Transaction<DB>) => Promise<T>): Promise<T> {
      let opened: { ended: boolean } | undefined;
      try {
        return await db.transaction().execute((tx) => {
          opened = { ended: false };
          OPENED.set(tx, opened);
          return work(tx);
        });
      } finally {
        if (opened !== undefined) opened.ended = true;
      }
    },
    enter: enterKysely,
  };
}
