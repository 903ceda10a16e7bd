import type { MigrationNames } from './migration';

/**
 * True when a store's statements must be MySQL's (MySQL 8 or MariaDB). Each feature keeps its
 * MySQL statements beside PostgreSQL's, in its `sql/mysql/` folder, and each of its statement
 * functions takes this branch first. @internal
 */
export function isMysql(target: { readonly names: MigrationNames } | MigrationNames): boolean {
  const names = 'names' in target ? target.names : target;
  return names.dialect === 'mysql';
}
