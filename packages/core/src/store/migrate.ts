import type { Knex } from 'knex';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import type { Migration, MigrationNames } from './migration';
import {
  knexRecordedVersions,
  resolveKnexMigrationsTable,
  type KnexMigrationsTable,
  type KnexTableRef,
} from './migration-knex-table';
import { migrations as allMigrations } from './migrations';
import { rowsOf } from './rows';
import { mysqlMigrations } from './mysql/schema';

export { rowsOf } from './rows';

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

/** Options of {@link migrate}. */
export interface MigrateOptions {
  /**
   * Knex's migrations table, if justonce's migrations may run through knex's migrator; see
   * {@link KnexMigrationsTable}. When it records any of them, or is named here, the schema
   * is knex's to migrate: a migrate with nothing pending does nothing, one with migrations
   * pending throws {@link ConfigurationError} and changes nothing.
   */
  readonly knexMigrationsTable?: KnexMigrationsTable;
}

/**
 * Brings the schema up to date. Safe when several processes migrate at once: each migration
 * runs in its own transaction under a transaction-scoped advisory lock on the schema, and
 * inserts its own row first, so a second migrator waits, then sees the version and skips it.
 * A schema migrated through knex's migrator is left to it (see {@link MigrateOptions}).
 */
export async function migrate(
  knex: Knex,
  names: MigrationNames,
  migrations: readonly Migration[] = allMigrations,
  options: MigrateOptions = {},
): Promise<MigrationResult> {
  const knexTable = resolveKnexMigrationsTable(options.knexMigrationsTable);
  if (knexTable !== undefined) {
    const upToDate = await leftToKnex(knex, names, migrations, knexTable);
    if (upToDate !== undefined) return upToDate;
  }
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

/** Knex's migrator runs justonce's migrations on PostgreSQL only. @internal */
export function knexTableOnMysql(): ConfigurationError {
  return new ConfigurationError(
    'knexMigrationsTable applies to PostgreSQL: on MySQL and MariaDB justonce migrates its own tables with store.migrate()',
  );
}

/** What {@link migrationStatus} found. */
export interface MigrationStatus {
  /** The highest version applied; 0 when the schema has none. */
  readonly version: number;
  /** The versions applied, in order, whichever migrator ran them. */
  readonly applied: readonly number[];
  /** Those of `applied` that knex's migrator records (see {@link MigrationStatusOptions}). */
  readonly recordedByKnex: readonly number[];
  /** The migrations of this release not applied yet, in order. */
  readonly pending: ReadonlyArray<{ readonly version: number; readonly name: string }>;
}

/** Options of {@link migrationStatus}. */
export interface MigrationStatusOptions {
  /**
   * Knex's migrations table, whose records of justonce's migrations (run through
   * {@link createKnexMigrationSource}) count as applied; see {@link KnexMigrationsTable}.
   * Default: the store's `knexMigrationsTable`, else knex's default table if it exists.
   */
  readonly knexMigrationsTable?: KnexMigrationsTable;
}

const STATUS_KEYS = optionKeys<MigrationStatusOptions>()(['knexMigrationsTable']);

/**
 * Which of this release's migrations the store's schema has and which it lacks, as
 * `store.migrate()` records them and as knex's migrator records them when they ran through
 * {@link createKnexMigrationSource} (see {@link MigrationStatusOptions}). Read-only: a schema
 * that does not exist yet has every migration pending, and nothing is created.
 */
export async function migrationStatus(
  store: {
    readonly knex: Knex;
    readonly names: MigrationNames;
    readonly knexMigrationsTable?: KnexMigrationsTable;
  },
  options: MigrationStatusOptions = {},
): Promise<MigrationStatus> {
  rejectUnknownOptions(options, STATUS_KEYS, 'migrationStatus');
  if (store.names.dialect === 'mysql') {
    if (options.knexMigrationsTable !== undefined) throw knexTableOnMysql();
    return readStatus(store.knex, store.names, mysqlMigrations, []);
  }
  const table = resolveKnexMigrationsTable(
    options.knexMigrationsTable ?? store.knexMigrationsTable,
  );
  const inKnex =
    table === undefined
      ? []
      : await knexRecordedVersions(store.knex, store.names, table, allMigrations);
  return readStatus(store.knex, store.names, allMigrations, inKnex);
}

/**
 * The status from justonce's own record of migrations plus `inKnex`, the versions knex's
 * migrator records.
 */
async function readStatus(
  knex: Knex,
  names: MigrationNames,
  migrations: readonly Migration[],
  inKnex: readonly number[],
): Promise<MigrationStatus> {
  const table = names.table('migrations');
  const exists =
    names.dialect === 'mysql'
      ? await knex.raw(
          `select count(*) > 0 as present from information_schema.tables
            where table_schema = ? and table_name = ?`,
          [names.schema.slice(1, -1), names.raw('migrations')],
        )
      : await knex.raw(`select to_regclass(?) is not null as present`, [table]);
  const have = new Set(inKnex);
  const present: unknown = rowsOf<{ present: unknown }>(exists)[0]?.present;
  if (present === true || Number(present) === 1) {
    const result = await knex.raw(`select version from ${table}`);
    for (const r of rowsOf<{ version: number | string }>(result)) have.add(Number(r.version));
  }
  const applied = [...have].sort((a, b) => a - b);
  const pending = [...migrations]
    .sort((a, b) => a.version - b.version)
    .filter((m) => !have.has(m.version))
    .map(({ version, name }) => ({ version, name }));
  return {
    version: applied.length === 0 ? 0 : Math.max(...applied),
    applied,
    recordedByKnex: [...inKnex],
    pending,
  };
}

/**
 * When knex's migrator has the schema (its table records some of justonce's migrations, or
 * was named): the result of a migrate with nothing to do, or a refusal when migrations are
 * pending, which only knex may apply, or its record would miss them and it would run them
 * again. `undefined` when the schema is justonce's own to migrate.
 */
async function leftToKnex(
  knex: Knex,
  names: MigrationNames,
  migrations: readonly Migration[],
  table: KnexTableRef,
): Promise<MigrationResult | undefined> {
  const inKnex = await knexRecordedVersions(knex, names, table, migrations);
  if (!table.named && inKnex.length === 0) return undefined;
  const status = await readStatus(knex, names, migrations, inKnex);
  if (status.pending.length === 0) return { applied: [], version: status.version };
  const why = table.named
    ? `knexMigrationsTable names ${table.label}`
    : `knex's table ${table.label} records ${inKnex.length} of its migrations`;
  const schema = names.schema.slice(1, -1);
  throw new ConfigurationError(
    `schema ${schema} is migrated through knex's migrator (${why}): apply its ${status.pending.length} pending migration(s) through knex, with knex.migrate.latest and createKnexMigrationSource on that table, not with store.migrate() or justonce migrate, so that knex's table stays the one record of what ran; nothing was changed`,
    { schema, knexMigrationsTable: table.label, pending: status.pending },
  );
}
