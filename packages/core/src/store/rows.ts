import { isMysqlResult, mysqlRows } from '../transactions/mysql-result';

/** Rows from a `knex.raw` result on pg, PGlite or mysql2. */
export function rowsOf<T = Record<string, unknown>>(result: unknown): T[] {
  if (isMysqlResult(result)) return mysqlRows<T>(result);
  if (Array.isArray(result)) return result as T[];
  const rows = (result as { rows?: unknown } | null | undefined)?.rows;
  return Array.isArray(rows) ? (rows as T[]) : [];
}
