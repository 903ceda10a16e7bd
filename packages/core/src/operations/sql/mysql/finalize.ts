import type { Knex } from 'knex';
import { preparedOn, prepared, type StatementStore } from '../../../store/prepared';
import type { SqlRunner } from '../../../transactions/sql';
import { rowsOf } from '../../../store/migrate';
import type { Final, Finalize } from '../finalize';
import type { RecordKey } from '../row';
import { micros, NOW, NOW_PLUS } from './row';

/**
 * @internal
 * MySQL's `finalizeRow`: the same compare-and-set on the owner. It matched when the update
 * counted its row: the store's connections count matched rows (FOUND_ROWS), and the status
 * changes from IN_PROGRESS anyway. The response goes into a `longtext` column, which keeps
 * its text as written, as PostgreSQL's `json` does.
 */
export async function mysqlFinalizeRow(
  db: SqlRunner,
  store: StatementStore,
  record: RecordKey,
  ownerId: string,
  final: Final,
  retentionMs: number,
): Promise<boolean> {
  const result = await preparedOn(
    store,
    db,
    `update ${store.names.table('idempotency')}
        set status = ?,
            response = ?,
            error = ?,
            lease_until = null,
            updated_at = ${NOW},
            expires_at = ${NOW_PLUS}
      where scope = ? and operation = ? and \`key\` = ?
        and owner_id = ? and status = 'IN_PROGRESS'`,
    [
      final.status,
      final.status === 'SUCCEEDED' ? final.responseJson : null,
      final.status === 'SUCCEEDED' ? null : final.errorJson,
      micros(retentionMs),
      record.scope,
      record.operation,
      record.key,
      ownerId,
    ],
  );
  return result.rowCount === 1;
}

/** `case owner_id when ? then ? … end`: each matched row's own value, by its owner id. */
function byOwner(items: readonly Finalize[], value: (item: Finalize) => unknown): CaseSql {
  return {
    sql: `case owner_id ${items.map(() => 'when ? then ?').join(' ')} end`,
    bindings: items.flatMap((item) => [item.ownerId, value(item)]),
  };
}

interface CaseSql {
  readonly sql: string;
  readonly bindings: unknown[];
}

/**
 * @internal
 * MySQL's `finalizeRows`: without `UPDATE … RETURNING`, an update cannot say which of its rows
 * matched, so one transaction first locks the rows still IN_PROGRESS under their owner
 * (`for update`, in key order as the caller sorted them), then updates exactly those in one
 * statement, each to its own values. The lock holds them from the read to the write, so the
 * compare-and-set is the same as PostgreSQL's single statement.
 */
export async function mysqlFinalizeRows(
  knex: Knex,
  store: StatementStore,
  items: readonly Finalize[],
): Promise<boolean[]> {
  const table = store.names.table('idempotency');
  const owned = `(scope = ? and operation = ? and \`key\` = ? and owner_id = ?)`;
  const matched = await knex.transaction(async (trx) => {
    const locked = await prepared(
      store,
      trx,
      `select owner_id from ${table}
        where (${items.map(() => owned).join(' or ')}) and status = 'IN_PROGRESS'
        for update`,
      items.flatMap((i) => [i.scope, i.operation, i.key, i.ownerId]),
    );
    const owners = new Set(rowsOf<{ owner_id: string }>(locked).map((row) => row.owner_id));
    const mine = items.filter((item) => owners.has(item.ownerId));
    if (mine.length === 0) return owners;
    const status = byOwner(mine, (i) => i.final.status);
    const response = byOwner(mine, (i) =>
      i.final.status === 'SUCCEEDED' ? i.final.responseJson : null,
    );
    const error = byOwner(mine, (i) => (i.final.status === 'SUCCEEDED' ? null : i.final.errorJson));
    const retention = byOwner(mine, (i) => micros(i.retentionMs));
    await prepared(
      store,
      trx,
      `update ${table}
          set status = ${status.sql},
              response = ${response.sql},
              error = ${error.sql},
              lease_until = null,
              updated_at = ${NOW},
              expires_at = date_add(${NOW}, interval ${retention.sql} microsecond)
        where ${mine.map(() => owned).join(' or ')}`,
      [
        ...status.bindings,
        ...response.bindings,
        ...error.bindings,
        ...retention.bindings,
        ...mine.flatMap((i) => [i.scope, i.operation, i.key, i.ownerId]),
      ],
    );
    return owners;
  });
  return items.map((item) => matched.has(item.ownerId));
}
