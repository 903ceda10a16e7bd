import type { MigrationNames } from './migration';

/** Which database a store talks to: `'mysql'` is MySQL 8 or MariaDB 10.6 and later. */
export type StoreDialect = 'postgres' | 'pglite' | 'mysql';

/**
 * True when a store's statements must be MySQL's (MySQL 8 or MariaDB). Each feature keeps its
 * MySQL statements beside PostgreSQL's, in its `sql/mysql/` folder, and each of its statement
 * functions takes this branch first. @internal
 */
export function isMysql(target: { readonly names: MigrationNames } | MigrationNames): boolean {
  const names = 'names' in target ? target.names : target;
  return names.dialect === 'mysql';
}
