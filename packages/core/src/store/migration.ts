/** Names a migration's SQL may use; every one is validated and quoted once. */
export interface MigrationNames {
  /** The quoted schema, e.g. `"justonce"`. */
  readonly schema: string;
  /** A quoted, schema-qualified table name with the prefix applied: `"justonce"."jo_outbox"`. */
  table(name: string): string;
  /** A quoted, unqualified name with the prefix applied, for indexes and constraints. */
  name(name: string): string;
  /** The unquoted prefixed name, for comparisons against catalog tables. */
  raw(name: string): string;
  /** `'mysql'` when the names are MySQL's (backticks); PostgreSQL's otherwise. */
  readonly dialect?: 'mysql';
}

/**
 * One schema change. Migrations are numbered, only ever appended, and each runs in its own
 * transaction. `up` returns the statements to run, one statement per string (PGlite's
 * extended protocol takes one at a time); values never go into them, only validated names.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  up(names: MigrationNames): readonly string[];
}
