export { createStore, createNames } from './store';
export type { Store, StoreOptions, StoreDialect } from './store';
export type { StoreTimeouts, StoreKeepAlive, ResolvedStoreTimeouts } from './limits';
export { StoreTimeoutError, isStoreTimeoutError } from './errors';
export type { StoreTimeoutLimit } from './errors';
export { migrate, migrationStatus, rowsOf } from './migrate';
export type {
  MigrateOptions,
  MigrationResult,
  MigrationStatus,
  MigrationStatusOptions,
} from './migrate';
export type { KnexMigrationsTable } from './migration-knex-table';
export type { Migration, MigrationNames } from './migration';
export { validateIdentifier, quoteIdentifier } from './identifiers';
export { createKnexMigrationSource } from './knex-migration-source';
export type { KnexMigrationSourceOptions } from './knex-migration-source';
