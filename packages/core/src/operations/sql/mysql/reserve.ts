import type { Knex } from 'knex';
import { prepared, type StatementStore } from '../../../store/prepared';
import { rowsOf } from '../../../store/migrate';
import type { Reserve, ReservedRow } from '../reserve';
import { toDate } from '../row';
import { micros, NOW, NOW_PLUS } from './row';

/**
 * PostgreSQL's take-over condition (see `TAKE_OVER` there), on the row as stored: expired, or
 * the same request hash and FAILED_RETRIABLE or IN_PROGRESS with a lapsed lease.
 */
const TAKE = `(expires_at <= ${NOW}
     or (request_hash = values(request_hash)
         and (status = 'FAILED_RETRIABLE'
              or (status = 'IN_PROGRESS' and lease_until <= ${NOW}))))`;

/**
 * True in each assignment after the first once the row was taken. MySQL and MariaDB run the
 * assignments of `on duplicate key update` left to right, each seeing the ones before: the
 * first one writes the new owner id only when {@link TAKE} holds, and that id is fresh (no row
 * had it), so from then on "owner is the new owner" says the row was taken. Should the server
 * assign all at once instead (MariaDB's SIMULTANEOUS_ASSIGNMENT), every assignment reads the
 * stored row and {@link TAKE} decides alone; a row not taken is never changed, so {@link TAKE}
 * keeps its answer either way. `expires_at` goes last: `attempts` and `created_at` read it.
 */
const TAKEN = `(owner_id <=> values(owner_id) or ${TAKE})`;

/**
 * The upsert PostgreSQL writes with `on conflict … do update … where`: MySQL has no `where`
 * there, so each column keeps its value unless the row is taken, which leaves a row not taken
 * untouched.
 */
const TAKE_OVER = `on duplicate key update
       owner_id = if(${TAKE}, values(owner_id), owner_id),
       attempts = if(${TAKEN},
                     case when expires_at <= ${NOW} then 1 else attempts + 1 end, attempts),
       created_at = if(${TAKEN} and expires_at <= ${NOW}, ${NOW}, created_at),
       request_hash = if(${TAKEN}, values(request_hash), request_hash),
       lease_until = if(${TAKEN}, values(lease_until), lease_until),
       response = if(${TAKEN}, null, response),
       error = if(${TAKEN}, null, error),
       updated_at = if(${TAKEN}, ${NOW}, updated_at),
       status = if(${TAKEN}, 'IN_PROGRESS', status),
       expires_at = if(${TAKEN}, values(expires_at), expires_at)`;

/** One reservation's row of the insert; seven bindings (see {@link rowValues}). */
const ROW = `(?, ?, ?, ?, 'IN_PROGRESS', ?, ${NOW_PLUS}, null, null, 1, ${NOW}, ${NOW}, ${NOW_PLUS})`;

function rowValues(item: Reserve): unknown[] {
  return [
    item.scope,
    item.operation,
    item.key,
    item.requestHash,
    item.ownerId,
    micros(item.leaseMs),
    micros(Math.max(item.retentionMs, item.leaseMs)),
  ];
}

/** The primary key of each item, as a condition the optimizer reads as a set of ranges. */
function keysOf(items: readonly Reserve[]): { sql: string; bindings: unknown[] } {
  return {
    sql: items.map(() => '(scope = ? and operation = ? and `key` = ?)').join(' or '),
    bindings: items.flatMap((i) => [i.scope, i.operation, i.key]),
  };
}

/**
 * @internal
 * MySQL's `reserveRows` (and `reserveRow`, with one item): one `insert … on duplicate key
 * update` over the items, in the caller's key order, then a read of the rows by key. MySQL
 * returns nothing of an upsert (no `RETURNING`), and its affected-row count cannot tell an
 * insert from a row left alone (mysql2 connects with FOUND_ROWS, which counts both as 1). So
 * a row is ours when the read finds our owner id in it: each id is fresh, and only this upsert
 * could have written it. A row taken from us between the two statements (its lease ran out
 * meanwhile) reads as not taken, which only makes the caller look again.
 */
export async function mysqlReserveRows(
  knex: Knex,
  store: StatementStore,
  items: readonly Reserve[],
): Promise<Array<ReservedRow | undefined>> {
  const table = store.names.table('idempotency');
  await prepared(
    store,
    knex,
    `insert into ${table}
       (scope, operation, \`key\`, request_hash, status, owner_id, lease_until,
        response, error, attempts, created_at, updated_at, expires_at)
     values ${items.map(() => ROW).join(',\n            ')}
     ${TAKE_OVER}`,
    items.flatMap(rowValues),
  );
  const keys = keysOf(items);
  const result = await prepared(
    store,
    knex,
    `select owner_id, attempts, lease_until, updated_at from ${table} where ${keys.sql}`,
    keys.bindings,
  );
  const byOwner = new Map<string, ReservedRow>();
  for (const row of rowsOf<ReturnedRow>(result)) {
    // `updated_at` is the upsert's now: the lease runs from it.
    byOwner.set(row.owner_id, {
      attempts: Number(row.attempts),
      leaseUntil: toDate(row.lease_until),
      dbNow: toDate(row.updated_at),
    });
  }
  return items.map((item) => byOwner.get(item.ownerId));
}

/** @internal MySQL's `reserveRow`: {@link mysqlReserveRows} for one item. */
export async function mysqlReserveRow(
  knex: Knex,
  store: StatementStore,
  item: Reserve,
): Promise<ReservedRow | undefined> {
  return (await mysqlReserveRows(knex, store, [item]))[0];
}

interface ReturnedRow {
  owner_id: string;
  attempts: number | string;
  lease_until: Date | string;
  updated_at: Date | string;
}
