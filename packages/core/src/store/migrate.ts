import type { Knex } from 'knex';
import type { Migration, MigrationNames } from './migration';
import { migrations as allMigrations } from './migrations';

/** What {@link migrate} did. */
export interface MigrationResult {
  /** Versions applied by this call, in order. */
  readonly applied: readonly number[];
  /** The schema's version afterwards. */
  readonly version: number;
}

/**
 * A migration's transaction runs without the store's statement and query limits: DDL on a
 * large table, or the wait for another migrator's lock, may rightly take longer than any
 * statement of normal operation. `query_timeout: 0` lifts the client-side bound of the
 * statement it is given (the store reads it per statement); the connect and acquire limits
 * and keepalive still apply.
 */
const UNBOUNDED = { query_timeout: 0 } as const;

/** Lifts the server's statement timeout for the rest of `trx`. */
async function unbound(trx: Knex.Transaction): Promise<void> {
  await trx.raw(`select set_config('statement_timeout', '0', true)`).options(UNBOUNDED);
}

/**
 * Brings the schema up to date. Safe when several processes migrate at once: each migration
 * runs in its own transaction under a transaction-scoped advisory lock on the schema, and
 * inserts its own row first, so a second migrator waits, then sees the version and skips it.
 */
export async function migrate(
  knex: Knex,
  names: MigrationNames,
  migrations: readonly Migration[] = allMigrations,
): Promise<MigrationResult> {
  const migrationsTable = names.table('migrations');
  const lockKey = `justonce:${names.schema}:${names.raw('migrations')}`;
  await knex.transaction(async (trx) => {
    await unbound(trx);
    await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [lockKey]).options(UNBOUNDED);
    await trx.raw(`create schema if not exists ${names.schema}`).options(UNBOUNDED);
    await trx
      .raw(
        `create table if not exists ${migrationsTable} (
         version integer primary key,
         name text not null,
         applied_at timestamptz not null default now()
       )`,
      )
      .options(UNBOUNDED);
  });

  const applied: number[] = [];
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    const ran = await knex.transaction(async (trx) => {
      await unbound(trx);
      await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [lockKey]).options(UNBOUNDED);
      const inserted = await trx.raw(
        `insert into ${migrationsTable} (version, name) values (?, ?) on conflict (version) do nothing returning version`,
        [migration.version, migration.name],
      );
      if (rowsOf(inserted).length === 0) return false;
      for (const statement of migration.up(names)) {
        await trx.raw(statement).options(UNBOUNDED);
      }
      return true;
    });
    if (ran) applied.push(migration.version);
  }
  const current = await knex.raw(
    `select coalesce(max(version), 0) as version from ${migrationsTable}`,
  );
  const version = Number(rowsOf<{ version: number | string }>(current)[0]?.version ?? 0);
  return { applied, version };
}

/** Rows from a `knex.raw` result on either pg or PGlite. */
export function rowsOf<T = Record<string, unknown>>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  const rows = (result as { rows?: unknown } | null | undefined)?.rows;
  return Array.isArray(rows) ? (rows as T[]) : [];
}
