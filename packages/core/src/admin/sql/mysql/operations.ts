import type { Knex } from 'knex';
import { NOW, text, truth } from '../../../operations/sql/mysql/row';
import type { IdempotencyRow } from '../../../operations/sql/row';
import { rowsOf } from '../../../store/migrate';
import { mysqlRowCount } from '../../../transactions/mysql-result';

/** A row of the admin's reads: a record, and whether it is past its lease. */
export type AdminOperationRow = IdempotencyRow & { past_lease: boolean };

/** @internal MySQL's "past its lease" condition of `operations.list`. */
export const MYSQL_PAST_LEASE = `lease_until <= ${NOW}`;

/** A name column (bytes on MySQL) as text, in the collation of the inbox's names. */
const name = (column: string): string => `${text(column)} collate utf8mb4_bin`;

const SELECT = `select ${name('scope')} as scope, ${name('operation')} as operation,
  ${name('`key`')} as \`key\`, request_hash, status, owner_id, lease_until, response, error,
  attempts, created_at, updated_at, expires_at,
  coalesce(status = 'IN_PROGRESS' and lease_until <= ${NOW}, false) as past_lease`;

/**
 * An inbox record in the shape of an operation's, as PostgreSQL's `SELECT_INBOX`. Every name
 * column is text in `utf8mb4_bin`, so that the `union` with the operations' (bytes, read back
 * as text) has one type. MySQL's inbox records always expire: no `infinity` to hide.
 */
const SELECT_INBOX = `select scope collate utf8mb4_bin, consumer collate utf8mb4_bin,
  message_id collate utf8mb4_bin, fingerprint, status, null, null, null, error, attempts,
  created_at, created_at, expires_at, false`;

/** Reads rows as PostgreSQL's do: a boolean `past_lease`, and the error parsed (MariaDB). */
function readRows(result: unknown): AdminOperationRow[] {
  return rowsOf<IdempotencyRow & { past_lease: unknown }>(result).map((row) => ({
    ...row,
    past_lease: truth(row.past_lease),
    error: typeof row.error === 'string' ? parseJson(row.error) : row.error,
  }));
}

function parseJson(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

/** @internal MySQL's `operations.list` statement, over the conditions the caller built. */
export async function mysqlListOperations(
  knex: Knex,
  table: string,
  where: readonly string[],
  bindings: readonly Knex.RawBinding[],
  limit: number,
): Promise<AdminOperationRow[]> {
  const result = await knex.raw(
    `${SELECT} from ${table} where ${where.join(' and ')}
      order by lease_until, operation, scope, \`key\` limit ?`,
    [...bindings, limit],
  );
  return readRows(result);
}

/** @internal MySQL's `operations.get`: the operation's record, else the inbox consumer's. */
export async function mysqlGetOperation(
  knex: Knex,
  table: string,
  inboxTable: string,
  [scope, operation, key]: readonly [string, string, string],
): Promise<AdminOperationRow | undefined> {
  const result = await knex.raw(
    `(${SELECT} from ${table} where scope = ? and operation = ? and \`key\` = ?)
     union all
     (${SELECT_INBOX} from ${inboxTable}
       where consumer = ? and scope = ? and message_id = ?)
     limit 1`,
    [scope, operation, key, operation, scope, key],
  );
  return readRows(result)[0];
}

/**
 * @internal
 * MySQL's `operations.release`: the same update, which clears the owner (fencing it off);
 * whether it changed a row is its affected-row count, as MySQL has no `UPDATE … RETURNING`.
 */
export async function mysqlReleaseOperation(
  knex: Knex,
  table: string,
  errorJson: string,
  [scope, operation, key]: readonly [string, string, string],
  force: boolean,
): Promise<boolean> {
  const result: unknown = await knex.raw(
    `update ${table}
        set status = 'FAILED_RETRIABLE', owner_id = null, lease_until = null,
            error = ?, updated_at = ${NOW}
      where scope = ? and operation = ? and \`key\` = ? and status = 'IN_PROGRESS'
        ${force ? '' : `and lease_until <= ${NOW}`}`,
    [errorJson, scope, operation, key],
  );
  return mysqlRowCount(result) > 0;
}
