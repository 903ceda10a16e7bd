/**
 * @internal
 * The database clock on MySQL and MariaDB: the statement's start, to the microsecond, in UTC
 * (the store's sessions run in UTC). Unlike PostgreSQL's `now()`, which is the transaction's
 * start, it moves between the statements of one transaction; each statement still reads one
 * instant throughout.
 */
export const NOW = 'current_timestamp(6)';

/** @internal The clock plus a bound number of microseconds (see {@link micros}). */
export const NOW_PLUS = `date_add(${NOW}, interval ? microsecond)`;

/**
 * 5 000 years in microseconds: `datetime` ends with the year 9999, and a time past it would be
 * null (or an error in strict mode), where PostgreSQL's timestamps go on for 294 000 years.
 * A longer lease or retention is this one, which outlives any deployment all the same.
 */
const MAX_MICROS = 5_000 * 365.25 * 24 * 3600 * 1e6;

/**
 * @internal
 * A millisecond count as the whole microseconds {@link NOW_PLUS} binds: `datetime(6)` keeps
 * microseconds, and MySQL's interval takes an integer.
 */
export function micros(ms: number): number {
  return Math.min(Math.round(ms * 1000), MAX_MICROS);
}

/**
 * @internal
 * A name column (`scope`, `operation`, `key`) read back as text: they are UTF-8 bytes
 * (`varbinary`), compared byte for byte, which utf8mb4_bin does not do (it pads with spaces).
 */
export function text(column: string): string {
  return `convert(${column} using utf8mb4)`;
}

/**
 * @internal
 * Columns selected for an `IdempotencyRow`. `key` is a reserved word on MySQL. The response
 * is `longtext`, so it comes back as the text written; the error is `json`, which MySQL
 * returns parsed and MariaDB (where it is `longtext`) as text: the row readers take both.
 */
export const RECORD_COLUMNS = `${text('scope')} as scope, ${text('operation')} as operation,
       ${text('`key`')} as \`key\`, request_hash, status, owner_id, lease_until, response, error,
       attempts, created_at, updated_at, expires_at`;

/** @internal A MySQL truth value (0/1, or `'1'` through some drivers) as a boolean. */
export function truth(value: unknown): boolean {
  return value === true || Number(value) === 1;
}
