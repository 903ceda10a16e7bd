import type { ClaimedRow } from '../claimed-row';

/** The columns a MySQL claim reads, qualified by `alias`, in the order of {@link ClaimedRow}. */
export function mysqlColumns(alias: string): string {
  return ['id', 'destination', 'partition_key', 'message_id', 'headers', 'payload', 'attempts']
    .map((column) => `${alias}.${column}`)
    .join(', ');
}

/** `?, ?, …` for `count` values. @internal */
export function marks(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

/**
 * `cast(? as signed), …` for `count` row ids: the ids travel as decimal text (mysql2 returns
 * BIGINT as strings), and a BIGINT compared with a string is compared as a double, exact only
 * up to 2^53. @internal
 *
 * The statements that lock or write rows by these ids name `force index (primary)`: given
 * `id in (…) and status = 'pending'`, MariaDB picks the `(status, id)` index, and a locking
 * statement through it was seen waiting on rows outside its list (rows another relay held),
 * so two relays marking their own rows deadlocked and one batch was published twice. By
 * primary key each statement locks exactly the rows it names, as PostgreSQL's do.
 */
export function idMarks(count: number): string {
  return Array.from({ length: count }, () => 'cast(? as signed)').join(', ');
}

/**
 * mysql2's rows as the relay reads them (PostgreSQL's arrive packed, see `packed-rows.ts`;
 * MySQL's come as plain rows, which mysql2 reads cheaply): ids as text (BIGINT comes as a
 * string already), headers as they come (an object from MySQL's JSON, text from MariaDB's,
 * which `storedHeaders` parses), payloads as the driver's Buffer. @internal
 */
export function mysqlClaimedRows(rows: ReadonlyArray<Record<string, unknown>>): ClaimedRow[] {
  return rows.map((row) => ({
    id: String(row.id as string | number),
    destination: row.destination as string,
    partition_key: (row.partition_key as string | null) ?? null,
    message_id: row.message_id as string,
    headers: row.headers as Record<string, string> | string,
    payload: row.payload as Uint8Array,
    attempts: Number(row.attempts),
  }));
}
