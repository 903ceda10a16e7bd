import type { Knex } from 'knex';
import { ConfigurationError } from '../errors';
import { quoteIdentifier, validateIdentifier } from './identifiers';
import type { Migration, MigrationNames } from './migration';
import { rowsOf } from './rows';

/**
 * Knex's migrations table, when justonce's migrations may have been applied through knex's
 * migrator ({@link createKnexMigrationSource}): its `tableName`, or `schemaName.tableName`
 * when knex was given a `schemaName`. `false` turns the lookup off. Left out, justonce looks
 * for knex's default table, `knex_migrations` on the search path.
 */
export type KnexMigrationsTable = string | false;

/** Knex's default `tableName`, looked for when no table is named. */
export const KNEX_DEFAULT_TABLE = 'knex_migrations';

/** A checked knex migrations table. @internal */
export interface KnexTableRef {
  /** Quoted and, when given with a schema, qualified: for SQL and `to_regclass`. */
  readonly sql: string;
  /** As the user wrote it, for messages. */
  readonly label: string;
  /** Whether it was named (an option) rather than knex's default looked for. */
  readonly named: boolean;
}

/**
 * Checks a `knexMigrationsTable` option (`option` names it in the message): `undefined` is
 * knex's default table, looked for; `false` is none. @internal
 */
export function resolveKnexMigrationsTable(
  value: unknown,
  option = 'knexMigrationsTable',
): KnexTableRef | undefined {
  if (value === false) return undefined;
  if (value === undefined) {
    return { sql: quoteIdentifier(KNEX_DEFAULT_TABLE), label: KNEX_DEFAULT_TABLE, named: false };
  }
  const parts = typeof value === 'string' ? value.split('.') : [];
  const valid =
    parts.length >= 1 &&
    parts.length <= 2 &&
    parts.every((part) => {
      try {
        return validateIdentifier(part, option) === part;
      } catch {
        return false;
      }
    });
  if (!valid) {
    throw new ConfigurationError(
      `${option} must be false, or knex's migrations table as tableName or schemaName.tableName (each 1-63 characters of a-z, 0-9 and _, not starting with a digit), got ${JSON.stringify(value)}`,
      { [option]: value },
    );
  }
  return {
    sql: parts.map((part) => quoteIdentifier(part)).join('.'),
    label: value as string,
    named: true,
  };
}

/**
 * The name knex records for `migration` of the schema and prefix of `names`, as
 * {@link createKnexMigrationSource} gives it: `justonce_<schema>[_<prefix>]_<NNN>_<name>`,
 * the prefix without its trailing underscores. @internal
 */
export function knexMigrationName(
  names: MigrationNames,
  migration: Pick<Migration, 'version' | 'name'>,
): string {
  // `names.schema` is the validated name in double quotes; `raw` prepends the prefix.
  const schema = names.schema.slice(1, -1);
  const prefix = names.raw('x').slice(0, -1);
  const label = prefix === '' ? schema : `${schema}_${prefix.replace(/_+$/, '')}`;
  return `justonce_${label}_${String(migration.version).padStart(3, '0')}_${migration.name}`;
}

/**
 * The versions of `migrations` that knex's `table` records for the schema of `names`. A table
 * that does not exist records none; so does knex's default table when this user may not
 * read it (it may belong to another application), whereas a named one is read regardless
 * and a refused read throws. @internal
 */
export async function knexRecordedVersions(
  knex: Knex,
  names: MigrationNames,
  table: KnexTableRef,
  migrations: readonly Migration[],
): Promise<number[]> {
  const found = await knex.raw(
    `select c.oid is not null as present,
            c.oid is not null and has_table_privilege(c.oid, 'select') as readable
       from (select to_regclass(?) as oid) c`,
    [table.sql],
  );
  const row = rowsOf<{ present: boolean; readable: boolean }>(found)[0];
  if (row?.present !== true || (!table.named && row.readable !== true)) return [];
  // Knex's table holds one row per migration ever run: small enough to read whole.
  const result = await knex.raw(`select name from ${table.sql}`);
  const recorded = new Set(rowsOf<{ name: string }>(result).map((r) => r.name));
  return migrations
    .filter((m) => recorded.has(knexMigrationName(names, m)))
    .map((m) => m.version)
    .sort((a, b) => a - b);
}
