import {
  DrizzleQueryError,
  is,
  sql,
  type SQL,
  type SQLChunk,
  type TablesRelationalConfig,
} from 'drizzle-orm';
import type { NodePgQueryResultHKT } from 'drizzle-orm/node-postgres';
import { PgTransaction, type PgDatabase } from 'drizzle-orm/pg-core';
import type { PgliteQueryResultHKT } from 'drizzle-orm/pglite';
import { InvalidTransactionError } from '../transactions/invalid-transaction-error';
import type {
  SqlResult,
  SqlTransaction,
  TransactionAdapter,
  TransactionState,
} from '../transactions/types';
import { hasPgStatus, pgClientState } from './pg-status';

/** The drivers the adapter supports: node-postgres (`drizzle-orm/node-postgres`) and PGlite. */
type DrizzleQueryResultHKT = NodePgQueryResultHKT | PgliteQueryResultHKT;

/**
 * The transaction type a drizzle database passes to `db.transaction`'s callback, e.g. for
 * typing a handler written apart from the inbox.
 *
 * @example
 * ```ts
 * const db = drizzle(pool, { schema });
 * type Tx = DrizzleTransaction<typeof db>;
 * const handler = async ({ trx }: HandlerContext<Tx>) => trx.insert(orders).values(order);
 * ```
 */
export type DrizzleTransaction<Db> =
  Db extends PgDatabase<infer R, infer F, infer S> ? PgTransaction<R, F, S> : never;

/** Transactions this adapter opened, and whether each has ended. */
const OPENED = new WeakMap<object, { ended: boolean }>();

/** Statement texts cut at their `$n` placeholders: the text around them and each value index. */
const SPLIT = new Map<string, { pieces: string[]; order: number[] }>();

/**
 * A drizzle `SQL` for a `$n` statement: its text as raw pieces around one `sql.param` per
 * placeholder, so drizzle numbers and binds the values itself (a `$n` used twice binds twice).
 */
function toSql(text: string, values: readonly unknown[]): SQL {
  let split = SPLIT.get(text);
  if (split === undefined) {
    const parts = text.split(/\$(\d+)/);
    split = {
      pieces: parts.filter((_part, i) => i % 2 === 0),
      order: parts.filter((_part, i) => i % 2 === 1).map((n) => Number(n) - 1),
    };
    if (SPLIT.size >= 1_000) SPLIT.clear();
    SPLIT.set(text, split);
  }
  const { pieces, order } = split;
  const chunks: SQLChunk[] = [sql.raw(pieces[0] ?? '')];
  order.forEach((index, i) => chunks.push(sql.param(values[index]), sql.raw(pieces[i + 1] ?? '')));
  return sql.join(chunks);
}

/**
 * Where the driver connection under `tx` stands, when it says: drizzle keeps the connection
 * on its session (untyped). A node-postgres client reports the server's status, unless a
 * reply is pending (a failed statement rejects before the status after it arrives); a PGlite
 * transaction only whether it has closed.
 */
function connectionState(tx: PgTransaction<DrizzleQueryResultHKT>): TransactionState | undefined {
  try {
    const client = (tx._.session as unknown as { client?: unknown }).client;
    if (hasPgStatus(client)) return pgClientState(client);
    return (client as { closed?: unknown } | undefined)?.closed === true ? 'idle' : undefined;
  } catch {
    return undefined;
  }
}

function isDrizzleTransaction(value: unknown): value is PgTransaction<DrizzleQueryResultHKT> {
  try {
    return is(value, PgTransaction);
  } catch {
    return false;
  }
}

function enterDrizzle(tx: PgTransaction<DrizzleQueryResultHKT>): SqlTransaction {
  if (!isDrizzleTransaction(tx)) {
    throw new InvalidTransactionError(
      'drizzle',
      'not-a-transaction',
      'expected a drizzle transaction (the argument of db.transaction(async (tx) => …)), not the database',
    );
  }
  const opened = OPENED.get(tx);
  const state = connectionState(tx);
  if (opened?.ended === true || state === 'idle') {
    throw new InvalidTransactionError('drizzle', 'finished', 'the transaction has already ended');
  }
  if (state === 'failed') {
    throw new InvalidTransactionError('drizzle', 'failed', 'a statement failed in the transaction');
  }
  return {
    dialect: 'postgres',
    async query(text: string, values: readonly unknown[]): Promise<SqlResult> {
      // node-postgres gives rowCount; PGlite affectedRows (0 for a SELECT) and, lately, rowCount.
      let result: {
        rows: Record<string, unknown>[];
        rowCount?: number | null;
        affectedRows?: number;
      };
      try {
        result = await tx.execute(toSql(text, values));
      } catch (error) {
        // DrizzleQueryError's message lists the values (payloads): throw the driver's error.
        throw error instanceof DrizzleQueryError && error.cause !== undefined ? error.cause : error;
      }
      const { rows } = result;
      const affected = result.rowCount ?? result.affectedRows;
      return { rows, rowCount: affected !== undefined && affected > 0 ? affected : rows.length };
    },
    state: () => (opened?.ended === true ? 'idle' : connectionState(tx)),
  };
}

/**
 * The adapter for Drizzle on node-postgres (`drizzle-orm/node-postgres`) or PGlite
 * (`drizzle-orm/pglite`): justonce opens transactions with `db.transaction`, and a handler
 * receives exactly the transaction drizzle passes there, so `trx.insert(table)` type-checks.
 *
 * @example
 * ```ts
 * const db = drizzle(pool, { schema });
 * const inbox = createInbox({ store, consumer: 'billing', transactions: drizzleTransactions(db) });
 * await inbox.process(envelope, async ({ trx }) => trx.insert(bills).values(bill));
 * ```
 */
export function drizzleTransactions<
  TQueryResult extends DrizzleQueryResultHKT,
  TFullSchema extends Record<string, unknown>,
  TSchema extends TablesRelationalConfig,
>(
  db: PgDatabase<TQueryResult, TFullSchema, TSchema>,
): TransactionAdapter<PgTransaction<TQueryResult, TFullSchema, TSchema>> {
  type Tx = PgTransaction<TQueryResult, TFullSchema, TSchema>;
  return {
    library: 'drizzle',
    async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
      let opened: { ended: boolean } | undefined;
      try {
        return await db.transaction((tx) => {
          opened = { ended: false };
          OPENED.set(tx, opened);
          return work(tx);
        });
      } finally {
        if (opened !== undefined) opened.ended = true;
      }
    },
    enter: (tx: Tx) => enterDrizzle(tx as unknown as PgTransaction<DrizzleQueryResultHKT>),
  };
}
