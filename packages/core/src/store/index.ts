export { createStore, createNames } from './store';
export type { Store, StoreOptions, StoreDialect } from './store';
export { migrate, rowsOf } from './migrate';
export type { MigrationResult } from './migrate';
export type { Migration, MigrationNames } from './migration';
export { validateIdentifier, quoteIdentifier } from './identifiers';
export { createKnexMigrationSource } from './knex-migration-source';
export type { KnexMigrationSourceOptions } from './knex-migration-source';
