import type { Knex } from 'knex';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import { createNames } from './store';
import type { Migration } from './migration';
import { knexMigrationName } from './migration-knex-table';
import { migrations as allMigrations } from './migrations';

/** Options of {@link createKnexMigrationSource}. */
export interface KnexMigrationSourceOptions {
  /** Schema for justonce's tables. Default `justonce`; validated like the store's. */
  readonly schema?: string;
  /** Prefix for every table name. Default empty; validated like the store's. */
  readonly tablePrefix?: string;
}

const KEYS = optionKeys<KnexMigrationSourceOptions>()(['schema', 'tablePrefix']);

/**
 * justonce's migrations as a knex `MigrationSource`, for applications that run their own
 * `knex migrate:latest`. Knex records them in its own migrations table, names prefixed
 * `justonce_`, each in its own transaction. They are forward-only: a rollback throws. Use
 * either this or `store.migrate()` for a given schema, not both: each keeps its own record of
 * what ran. `migrationStatus` and `store.migrate()` read knex's record too: `knex_migrations`
 * by itself, a table of another name when given as `knexMigrationsTable`; `store.migrate()`
 * then leaves the schema to knex, refusing while migrations are pending.
 *
 * ```ts
 * await knex.migrate.latest({ migrationSource: createKnexMigrationSource({ schema: 'justonce' }) });
 * ```
 */
export function createKnexMigrationSource(
  options: KnexMigrationSourceOptions = {},
): Knex.MigrationSource<Migration> {
  rejectUnknownOptions(options, KEYS, 'createKnexMigrationSource');
  const schema = options.schema ?? 'justonce';
  const tablePrefix = options.tablePrefix ?? '';
  const names = createNames(schema, tablePrefix);
  const first = Math.min(...allMigrations.map((m) => m.version));
  return {
    getMigrations: async () => [...allMigrations].sort((a, b) => a.version - b.version),
    // Names carry the schema and prefix, so two justonce schemas can share knex's table;
    // migrationStatus finds them there by the same names.
    getMigrationName: (migration) => knexMigrationName(names, migration),
    getMigration: async (migration) => ({
      up: async (knex: Knex) => {
        // The store's own runner creates the schema; under knex the first migration does.
        if (migration.version === first) {
          await knex.raw(`create schema if not exists ${names.schema}`);
        }
        for (const statement of migration.up(names)) await knex.raw(statement);
      },
      // Knex insists on a down step; ours are forward-only, so rolling back says so.
      down: async () => {
        throw new ConfigurationError(
          `justonce migrations are forward-only; ${migration.version} (${migration.name}) cannot be rolled back`,
          { version: migration.version },
        );
      },
    }),
  };
}
