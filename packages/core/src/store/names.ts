import { quoteIdentifier, validateIdentifier } from './identifiers';
import type { StoreDialect } from './dialect';
import type { MigrationNames } from './migration';

/** Builds the name helpers for a validated schema and prefix. */
export function createNames(
  schema: string,
  tablePrefix: string,
  dialect: StoreDialect = 'postgres',
): MigrationNames {
  const s = validateIdentifier(schema, 'schema');
  const prefix = validateIdentifier(tablePrefix, 'tablePrefix', true);
  const raw = (name: string): string =>
    validateIdentifier(`${prefix}${validateIdentifier(name, 'table name')}`, 'table name');
  const quote = (name: string): string => quoteIdentifier(name, dialect === 'mysql');
  return {
    schema: quote(s),
    table: (name) => `${quote(s)}.${quote(raw(name))}`,
    name: (name) => quote(raw(name)),
    raw,
    ...(dialect === 'mysql' ? { dialect: 'mysql' as const } : {}),
  };
}
