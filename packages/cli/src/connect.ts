import { existsSync, statSync } from 'node:fs';
import { createStore, migrationStatus, validateIdentifier, type Store } from '@justonce/core';
import { createAdmin, type Admin } from '@justonce/core/admin';
import { UsageError } from './usage-error';

/** The global options every command receives. */
export interface GlobalOptions {
  /** PostgreSQL, MySQL or MariaDB connection string; defaults to `DATABASE_URL`. */
  readonly databaseUrl?: string;
  /** A PGlite data directory, instead of a PostgreSQL database. */
  readonly pglite?: string;
  /** Schema holding justonce's tables. Default `justonce`. */
  readonly schema: string;
  /**
   * Knex's migrations table, when justonce's migrations run through knex's migrator:
   * `tableName` or `schemaName.tableName`. Default: knex's default table, if it exists.
   */
  readonly knexMigrationsTable?: string;
}

/** What every kind of store target has. */
interface TargetCommon {
  readonly schema: string;
  readonly knexMigrationsTable?: string;
}

/** Where the store is, once the global options were checked. */
export type StoreTarget =
  | (TargetCommon & { readonly kind: 'postgres' | 'mysql'; readonly url: string })
  | (TargetCommon & { readonly kind: 'pglite'; readonly dataDir: string });

/** Checks `--knex-migrations-table`: knex's `tableName`, or `schemaName.tableName`. */
function checkKnexMigrationsTable(value: string | undefined): void {
  if (value === undefined) return;
  const parts = value.split('.');
  const valid =
    parts.length <= 2 &&
    parts.every((part) => {
      try {
        validateIdentifier(part, 'table');
        return true;
      } catch {
        return false;
      }
    });
  if (!valid) {
    throw new UsageError(
      `--knex-migrations-table must be knex's tableName or schemaName.tableName, each matching [a-z_][a-z0-9_]*, got ${JSON.stringify(value)}`,
    );
  }
}

/** How a command opens the store. */
export interface OpenOptions {
  /**
   * Whether a PGlite data directory that does not exist yet may be created (only `migrate`):
   * any other command on a mistyped directory would create an empty database there.
   */
  readonly createPglite?: boolean;
}

/**
 * Checks the global options without touching the database, so a bad command line changes
 * nothing; throws {@link UsageError}.
 */
export function checkGlobalOptions(options: GlobalOptions, open: OpenOptions = {}): StoreTarget {
  try {
    validateIdentifier(options.schema, 'schema');
  } catch {
    throw new UsageError(
      `--schema must match [a-z_][a-z0-9_]*, got ${JSON.stringify(options.schema)}`,
    );
  }
  checkKnexMigrationsTable(options.knexMigrationsTable);
  const common: TargetCommon = {
    schema: options.schema,
    knexMigrationsTable: options.knexMigrationsTable,
  };
  if (options.pglite !== undefined) {
    if (options.databaseUrl !== undefined) {
      throw new UsageError('give either --database-url or --pglite, not both');
    }
    const dataDir = options.pglite;
    if (dataDir.trim() === '') throw new UsageError('--pglite needs a data directory');
    if (existsSync(dataDir) ? !statSync(dataDir).isDirectory() : !open.createPglite) {
      throw new UsageError(
        `--pglite ${JSON.stringify(dataDir)} is not a directory (justonce migrate, without --dry-run, creates one)`,
      );
    }
    return { ...common, kind: 'pglite', dataDir };
  }
  const url = options.databaseUrl ?? process.env['DATABASE_URL'];
  if (url === undefined || url === '') {
    throw new UsageError('no database: pass --database-url or --pglite, or set DATABASE_URL');
  }
  if (/^(mysql|mariadb):\/\//.test(url)) {
    if (options.knexMigrationsTable !== undefined) {
      throw new UsageError('--knex-migrations-table applies to PostgreSQL only');
    }
    return { ...common, kind: 'mysql', url };
  }
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new UsageError(
      '--database-url must be a postgres://, postgresql://, mysql:// or mariadb:// URL',
    );
  }
  return { ...common, kind: 'postgres', url };
}

/** Opens the store for one command, runs `use`, and always closes it. */
export async function withStore<T>(
  options: GlobalOptions,
  use: (store: Store) => Promise<T>,
  open: OpenOptions = {},
): Promise<T> {
  const target = checkGlobalOptions(options, open);
  const names = { schema: target.schema, knexMigrationsTable: target.knexMigrationsTable };
  const store = await createStore(
    target.kind === 'pglite'
      ? { ...names, pglite: { dataDir: target.dataDir } }
      : { ...names, connectionString: target.url, pool: { min: 0, max: 2 } },
  );
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

/**
 * Thrown when the schema has no justonce tables: exit 1 with the hint to migrate, or, when
 * knex's migrator ran them, to name its table.
 */
export class NotMigratedError extends Error {
  override readonly name = 'NotMigratedError';
  constructor(schema: string, knexMigrationsTable: string | undefined) {
    super(
      `schema ${schema} has no justonce tables; run: justonce migrate` +
        (knexMigrationsTable === undefined
          ? " (if your application runs them through knex's migrator under another table name than knex_migrations, pass --knex-migrations-table <name>)"
          : ` (none recorded in knex's table ${knexMigrationsTable} either)`),
    );
  }
}

/**
 * Opens the store, checks that it is migrated (else {@link NotMigratedError}, rather than a
 * driver's "relation does not exist"), and runs `use` with its operator API.
 */
export async function withAdmin<T>(
  options: GlobalOptions,
  use: (admin: Admin, store: Store) => Promise<T>,
): Promise<T> {
  return withStore(options, async (store) => {
    if ((await migrationStatus(store)).version === 0) {
      throw new NotMigratedError(store.schema, options.knexMigrationsTable);
    }
    return use(createAdmin(store), store);
  });
}
