import type { Knex } from 'knex';
import { prepared, type StatementStore } from '../../store/prepared';
import { rowsOf } from '../../store/migrate';
import { MILLISECONDS, toDate, type RecordKey } from './row';
import { isMysql } from '../../store/dialect';
import { mysqlReserveRow, mysqlReserveRows } from './mysql/reserve';

/** @internal What a successful reservation wrote. */
export interface ReservedRow {
  readonly attempts: number;
  readonly leaseUntil: Date;
  /** The database's `now()` when the reservation was made. */
  readonly dbNow: Date;
}

/** @internal One reservation to make: the record, its request and its new owner. */
export interface Reserve extends RecordKey {
  readonly requestHash: string;
  /** A fresh id, the owner the reservation is for. */
  readonly ownerId: string;
  readonly leaseMs: number;
  readonly retentionMs: number;
}

/** The columns a reservation inserts. */
const COLUMNS = `scope, operation, key, request_hash, status, owner_id, lease_until,
        response, error, attempts, created_at, updated_at, expires_at`;

/**
 * What makes an upsert a reservation: an existing row is taken over only when it is expired
 * (then it starts afresh, whatever its hash), or when its request hash matches and it is
 * FAILED_RETRIABLE or IN_PROGRESS with a lease that has run out.
 */
const TAKE_OVER = `on conflict (scope, operation, key) do update set
       request_hash = excluded.request_hash,
       status = 'IN_PROGRESS',
       owner_id = excluded.owner_id,
       lease_until = excluded.lease_until,
       response = null,
       error = null,
       attempts = case when t.expires_at <= now() then 1 else t.attempts + 1 end,
       created_at = case when t.expires_at <= now() then now() else t.created_at end,
       updated_at = now(),
       expires_at = excluded.expires_at
     where t.expires_at <= now()
        or (t.request_hash = excluded.request_hash
            and (t.status = 'FAILED_RETRIABLE'
                 or (t.status = 'IN_PROGRESS' and t.lease_until <= now())))`;

/**
 * @internal
 * The atomic reserve: one `INSERT … ON CONFLICT DO UPDATE … WHERE` statement. It inserts an
 * IN_PROGRESS row for an absent key, and takes over an existing row only when it is expired
 * (then it starts afresh, whatever its hash), or when its request hash matches and it is
 * FAILED_RETRIABLE or IN_PROGRESS with a lease that has run out. Anything else leaves the row
 * untouched and returns nothing; the caller then reads the row to say why. Lease and expiry
 * use the database clock. A fixed text, run as a prepared statement when the store allows.
 */
export async function reserveRow(
  knex: Knex,
  store: StatementStore,
  item: Reserve,
): Promise<ReservedRow | undefined> {
  if (isMysql(store)) return mysqlReserveRow(knex, store, item);
  const result = await prepared(
    store,
    knex,
    `insert into ${store.names.table('idempotency')} as t
       (${COLUMNS})
     values (?, ?, ?, ?, 'IN_PROGRESS', ?, now() + ${MILLISECONDS},
        null, null, 1, now(), now(), now() + greatest(${MILLISECONDS}, ${MILLISECONDS}))
     ${TAKE_OVER}
     returning t.attempts, t.lease_until, now() as db_now`,
    [
      item.scope,
      item.operation,
      item.key,
      item.requestHash,
      item.ownerId,
      item.leaseMs,
      item.retentionMs,
      item.leaseMs,
    ],
  );
  const row = rowsOf<ReturnedRow>(result)[0];
  return row === undefined ? undefined : reservedRow(row);
}

/**
 * @internal
 * {@link reserveRow} for several records at once (distinct keys, sorted by the caller): one
 * statement over arrays, each record reserved or left as the single-row statement would.
 * Resolves to what each reservation wrote, in the items' order; `undefined` for a record that
 * was not taken.
 */
export async function reserveRows(
  knex: Knex,
  store: StatementStore,
  items: readonly Reserve[],
): Promise<Array<ReservedRow | undefined>> {
  if (isMysql(store)) return mysqlReserveRows(knex, store, items);
  const ms = (column: string): string => `r.${column} * interval '1 millisecond'`;
  const result = await prepared(
    store,
    knex,
    `insert into ${store.names.table('idempotency')} as t
       (${COLUMNS})
     select r.scope, r.operation, r.key, r.request_hash, 'IN_PROGRESS', r.owner_id,
            now() + ${ms('lease_ms')}, null, null, 1, now(), now(),
            now() + greatest(${ms('retention_ms')}, ${ms('lease_ms')})
       from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
                   ?::double precision[], ?::double precision[]) with ordinality
            as r (scope, operation, key, request_hash, owner_id, lease_ms, retention_ms, ord)
      order by r.ord
     ${TAKE_OVER}
     returning t.owner_id, t.attempts, t.lease_until, now() as db_now`,
    [
      items.map((i) => i.scope),
      items.map((i) => i.operation),
      items.map((i) => i.key),
      items.map((i) => i.requestHash),
      items.map((i) => i.ownerId),
      items.map((i) => i.leaseMs),
      items.map((i) => i.retentionMs),
    ],
  );
  const byOwner = new Map<string, ReservedRow>();
  for (const row of rowsOf<ReturnedRow & { owner_id: string }>(result)) {
    byOwner.set(row.owner_id, reservedRow(row));
  }
  return items.map((item) => byOwner.get(item.ownerId));
}

/** What a reservation statement returns of a row it took. */
interface ReturnedRow {
  attempts: number | string;
  lease_until: Date | string;
  db_now: Date | string;
}

function reservedRow(row: ReturnedRow): ReservedRow {
  return {
    attempts: Number(row.attempts),
    leaseUntil: toDate(row.lease_until),
    dbNow: toDate(row.db_now),
  };
}
