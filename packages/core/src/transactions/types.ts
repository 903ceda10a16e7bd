/**
 * The transaction seam: what justonce needs from a transaction that the caller's own database
 * library opened, so the dedup record, the outbox events and the operation's record commit
 * with the caller's business rows. Each library gets a small {@link TransactionAdapter}.
 */

import type { Knex } from 'knex';

/**
 * A knex transaction: what handlers and `outbox.add` take when no other adapter is given.
 */
export type KnexTransaction = Knex.Transaction;

/**
 * The SQL dialect of a transaction: PostgreSQL (and PGlite), or MySQL 8 and MariaDB, which
 * only knex transactions reach today (the other adapters are PostgreSQL's).
 */
export type SqlDialect = 'postgres' | 'mysql';

/**
 * Where a transaction stands, as the server reported it after the last statement:
 * `active` (statements run), `failed` (a statement failed: COMMIT would roll back),
 * `idle` (no transaction open on the connection).
 */
export type TransactionState = 'active' | 'failed' | 'idle';

/** The rows and the affected-row count of one statement. */
export interface SqlResult {
  readonly rows: Record<string, unknown>[];
  readonly rowCount: number;
}

/** How one statement may be run. */
export interface SqlQueryOptions {
  /**
   * A name to prepare the statement under, for statements justonce runs very often. A
   * driver that cannot prepare named statements ignores it.
   */
  readonly name?: string;
}

/** One open transaction, as justonce writes into it. */
export interface SqlTransaction {
  readonly dialect: SqlDialect;
  /**
   * Runs one statement with `$1`, `$2`, … placeholders inside the transaction. The text is
   * justonce's own; values are always passed as parameters, never interpolated.
   */
  query(text: string, values: readonly unknown[], options?: SqlQueryOptions): Promise<SqlResult>;
  /**
   * The transaction's state when the driver tracks it (node-postgres does), or `undefined`
   * when it cannot tell: the inbox then asks the server with one probe statement before it
   * commits a handler's work.
   */
  state(): TransactionState | undefined;
}

/**
 * How justonce opens and enters the transactions of one database library. `Tx` is the
 * library's own transaction type: a handler and `outbox.add` receive and take exactly that.
 */
export interface TransactionAdapter<Tx> {
  /** The library's name, for errors and logs (`knex`, `pg`, `kysely`, `drizzle`, `typeorm`). */
  readonly library: string;
  /**
   * Opens a transaction, runs `work` in it and commits; rolls back and rethrows when `work`
   * throws.
   */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * The transaction behind `tx`, checked without running SQL: a value that is not this
   * library's transaction, or one not (or no longer) open, throws
   * {@link InvalidTransactionError}.
   */
  enter(tx: Tx): SqlTransaction;
}
