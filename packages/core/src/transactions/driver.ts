import type { Knex } from 'knex';
import type { SqlResult } from './types';

/**
 * One of justonce's statements, run on a driver connection as it is: `$n` text, the values,
 * and the name it is prepared under (none: parsed on every run). @internal
 */
export type RunStatement = (
  text: string,
  values: readonly unknown[],
  name: string | undefined,
) => Promise<SqlResult>;

/** What justonce calls on a node-postgres connection. */
interface PgConnection {
  query(
    config: string | { name: string; text: string; values: unknown[] },
    values?: unknown[],
  ): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>;
}

/** True for a node-postgres connection (the one driver that reports the transaction status). */
function isPg(connection: unknown): connection is PgConnection {
  return (
    typeof connection === 'object' &&
    connection !== null &&
    typeof (connection as { getTransactionStatus?: unknown }).getTransactionStatus === 'function'
  );
}

/**
 * The statement runner of a connection knex handed out, or `undefined` when its driver is not
 * one justonce speaks to directly (PGlite's knex client): the caller then goes through knex.
 * A node-postgres connection takes `{ name, text, values }` as it is, so the statement skips
 * knex's query builder, its binding conversion and its events; the store's time limits and
 * liveness check stay, because they wrap the connection's own `query` (see `limits.ts`).
 * A MySQL driver would get its branch here. @internal
 */
export function driverStatements(connection: unknown): RunStatement | undefined {
  if (!isPg(connection)) return undefined;
  return (text, values, name) => runPg(connection, text, values, name);
}

async function runPg(
  client: PgConnection,
  text: string,
  values: readonly unknown[],
  name: string | undefined,
): Promise<SqlResult> {
  // The (text, values) form spares node-postgres a copy of a config object per statement.
  const result =
    name === undefined
      ? await client.query(text, values as unknown[])
      : await client.query({ name, text, values: values as unknown[] });
  return { rows: result.rows, rowCount: result.rowCount ?? result.rows.length };
}

/** What a knex client offers to hand out a connection and take it back. */
interface KnexConnections {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
}

/**
 * Each knex transaction's runner, found on its first statement: a transaction's client
 * hands out the transaction's own connection (knex 3's `makeTxClient`), and keeps it. `null`:
 * a driver justonce does not speak to directly.
 */
const TRANSACTION_RUNNERS = new WeakMap<Knex.Transaction, RunStatement | null>();

/**
 * The runner of a knex transaction's connection, or `null` when its driver is not one
 * justonce speaks to directly. Synchronous after the first call. @internal
 */
export function transactionStatements(
  trx: Knex.Transaction,
): RunStatement | null | Promise<RunStatement | null> {
  const known = TRANSACTION_RUNNERS.get(trx);
  if (known !== undefined) return known;
  const client = trx.client as unknown as KnexConnections;
  return client.acquireConnection().then((connection) => {
    const run = driverStatements(connection) ?? null;
    TRANSACTION_RUNNERS.set(trx, run);
    return run;
  });
}

/** Whether each knex's pool hands out connections justonce speaks to directly. */
const POOL_DIRECT = new WeakMap<Knex, boolean>();

/**
 * Runs one statement on a connection of `knex`'s pool, taken and given back around it, as
 * knex's runner does; `undefined` when the pool's driver is not one justonce speaks to
 * directly (the caller then goes through knex). The store's acquire timeout and each
 * connection's guards stay in force: they wrap knex's `acquireConnection` and the
 * connection's `query`. @internal
 */
export async function runOnPool(
  knex: Knex,
  text: string,
  values: readonly unknown[],
  name: string | undefined,
): Promise<SqlResult | undefined> {
  if (POOL_DIRECT.get(knex) === false) return undefined;
  const client = knex.client as unknown as KnexConnections;
  const connection = await client.acquireConnection();
  try {
    const direct = isPg(connection);
    POOL_DIRECT.set(knex, direct);
    return direct ? await runPg(connection, text, values, name) : undefined;
  } finally {
    await client.releaseConnection(connection);
  }
}
