/**
 * mysql2's answer to a statement, through knex's `raw`: `[rows, fields]` for a statement
 * that returns rows, `[header]` with `affectedRows` for one that does not.
 */
export interface MysqlHeader {
  readonly affectedRows: number;
  readonly insertId?: number | string;
}

function isHeader(value: unknown): value is MysqlHeader {
  return typeof value === 'object' && value !== null && 'affectedRows' in value;
}

/** True for what knex's `raw` returns on mysql2. @internal */
export function isMysqlResult(result: unknown): result is [unknown, unknown?] {
  return (
    Array.isArray(result) && result.length <= 2 && (Array.isArray(result[0]) || isHeader(result[0]))
  );
}

/** The rows of a mysql2 `raw` result (none for a statement that returns none). @internal */
export function mysqlRows<T = Record<string, unknown>>(result: unknown): T[] {
  if (!isMysqlResult(result)) return [];
  return Array.isArray(result[0]) ? (result[0] as T[]) : [];
}

/** The rows a statement changed or returned, from a mysql2 `raw` result. @internal */
export function mysqlRowCount(result: unknown): number {
  if (!isMysqlResult(result)) return 0;
  const [first] = result;
  return Array.isArray(first) ? first.length : isHeader(first) ? first.affectedRows : 0;
}
