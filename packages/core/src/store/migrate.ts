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

/** What {@link migrationStatus} found. */
export interface MigrationStatus {
  /** The highest version applied; 0 when the schema has none. */
  readonly version: number;
  /** The versions applied, in order. */
  readonly applied: readonly number[];
  /** The migrations of this release not applied yet, in order. */
  readonly pending: ReadonlyArray<{ readonly version: number; readonly name: string }>;
}

/**
 * Which of this release's migrations the store's schema has and which it lacks, as
 * `store.migrate()` records them. Read-only: a schema that does not exist yet has every
 * migration pending, and nothing is created.
 */
export async function migrationStatus(
  store: { readonly knex: Knex; readonly names: MigrationNames },
  migrations: readonly Migration[] = allMigrations,
): Promise<MigrationStatus> {
  const table = store.names.table('migrations');
  const exists = await store.knex.raw(`select to_regclass(?) is not null as present`, [table]);
  let applied: number[] = [];
  if (rowsOf<{ present: boolean }>(exists)[0]?.present === true) {
    const result = await store.knex.raw(`select version from ${table} order by version`);
    applied = rowsOf<{ version: number | string }>(result).map((r) => Number(r.version));
  }
  const have = new Set(applied);
  const pending = [...migrations]
    .sort((a, b) => a.version - b.version)
    .filter((m) => !have.has(m.version))
    .map(({ version, name }) => ({ version, name }));
  return { version: applied.length === 0 ? 0 : Math.max(...applied), applied, pending };
}
