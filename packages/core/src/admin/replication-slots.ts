import { ConfigurationError } from '../errors/configuration-error';
import { rowsOf } from '../store/rows';
import type { Store } from '../store/store';
import { ReplicationSlotActiveError } from './errors/replication-slot-active-error';
import { ReplicationSlotNotFoundError } from './errors/replication-slot-not-found-error';
import type { ReplicationSlotStatus, ReplicationSlotWalStatus } from './types';

/** What PostgreSQL accepts as a slot name: lower-case letters, digits and `_`, 1 to 63. */
const SLOT_NAME = /^[a-z0-9_]{1,63}$/;

/** Checks a slot name before any SQL; returns it unchanged. @internal */
export function validateSlotName(value: unknown): string {
  if (typeof value !== 'string' || !SLOT_NAME.test(value)) {
    throw new ConfigurationError(
      `a replication slot name is 1-63 characters of a-z, 0-9 and _, got ${typeof value === 'string' ? JSON.stringify(value) : typeof value}`,
      { slot: typeof value === 'string' ? value : typeof value },
    );
  }
  return value;
}

/**
 * The logical slots of the current database with their lag, one round trip. The WAL position
 * "now" is the server's write position, or on a standby (PostgreSQL 16 and later keep logical
 * slots there) the position it replayed. `wal_status`, `safe_wal_size` (PostgreSQL 13) and
 * `inactive_since` (17) are read through the row's JSON, so the one statement runs on every
 * version and gives `null` where a column is missing. The walsender of an active slot is found
 * by its process id; its `flush_lag` is the time between writing WAL and the reader confirming
 * it (the last one measured: PostgreSQL clears it a while after the reader caught up).
 */
const REPLICATION_SLOTS_QUERY = `select s.slot_name, s.plugin, s.active, s.active_pid,
    s.restart_lsn::text as restart_lsn, s.confirmed_flush_lsn::text as confirmed_flush_lsn,
    to_jsonb(s) ->> 'wal_status' as wal_status,
    (to_jsonb(s) ->> 'safe_wal_size')::bigint as safe_wal_size,
    (to_jsonb(s) ->> 'inactive_since')::timestamptz as inactive_since,
    greatest(0, pg_wal_lsn_diff(w.lsn, s.confirmed_flush_lsn))::text as lag_bytes,
    greatest(0, pg_wal_lsn_diff(w.lsn, s.restart_lsn))::text as retained_bytes,
    extract(epoch from r.flush_lag)::float8 as flush_lag_seconds
  from pg_replication_slots s
  cross join (select case when pg_is_in_recovery() then pg_last_wal_replay_lsn()
                          else pg_current_wal_lsn() end as lsn) w
  left join pg_stat_replication r on s.active and r.pid = s.active_pid
  where s.slot_type = 'logical' and s.database = current_database()
  order by s.slot_name`;

/**
 * Drops the named logical slot of the current database, and says which database that is.
 * PostgreSQL refuses a slot in use (55006) on its own; the filter keeps slots of other
 * databases and physical ones out of reach.
 */
const DROP_SLOT = `with dropped as (
    select s.slot_name, pg_drop_replication_slot(s.slot_name)
      from pg_replication_slots s
     where s.slot_name = ? and s.slot_type = 'logical' and s.database = current_database())
  select current_database() as database, (select count(*) from dropped)::int as dropped`;

interface SlotRow {
  slot_name: string;
  plugin: string;
  active: boolean;
  active_pid: number | null;
  restart_lsn: string | null;
  confirmed_flush_lsn: string | null;
  wal_status: string | null;
  safe_wal_size: string | number | null;
  inactive_since: Date | string | null;
  lag_bytes: string | null;
  retained_bytes: string | null;
  flush_lag_seconds: number | null;
}

const WAL_STATUSES: ReadonlySet<string> = new Set(['reserved', 'extended', 'unreserved', 'lost']);

function numberOrNull(value: string | number | null): number | null {
  return value === null ? null : Number(value);
}

/** 0 when the reader confirmed everything; else the walsender's measure, if any. */
function lagSeconds(row: SlotRow, lagBytes: number | null): number | null {
  if (lagBytes === 0) return 0;
  return row.active ? row.flush_lag_seconds : null;
}

function slotOf(row: SlotRow): ReplicationSlotStatus {
  const lagBytes = numberOrNull(row.lag_bytes);
  return {
    name: row.slot_name,
    plugin: row.plugin,
    active: row.active,
    activePid: row.active_pid,
    restartLsn: row.restart_lsn,
    confirmedFlushLsn: row.confirmed_flush_lsn,
    walStatus:
      row.wal_status !== null && WAL_STATUSES.has(row.wal_status)
        ? (row.wal_status as ReplicationSlotWalStatus)
        : null,
    safeWalSizeBytes: numberOrNull(row.safe_wal_size),
    lagBytes,
    retainedBytes: numberOrNull(row.retained_bytes),
    lagSeconds: lagSeconds(row, lagBytes),
    inactiveSince: row.inactive_since === null ? null : new Date(row.inactive_since),
  };
}

/** Reads the database's logical slots; none on PGlite and MySQL. @internal */
export async function readReplicationSlots(store: Store): Promise<ReplicationSlotStatus[]> {
  if (store.dialect !== 'postgres') return [];
  return rowsOf<SlotRow>(await store.knex.raw(REPLICATION_SLOTS_QUERY)).map(slotOf);
}

/** The process PostgreSQL names in "replication slot … is active for PID n", if any. */
function activePid(error: unknown): number | null {
  const message = (error as { message?: unknown } | null)?.message;
  const match = typeof message === 'string' ? /PID (\d+)/.exec(message) : null;
  return match === null ? null : Number(match[1]);
}

/** Drops a logical slot of the database (see `Admin.dropReplicationSlot`). @internal */
export async function dropReplicationSlot(store: Store, name: string): Promise<void> {
  const slot = validateSlotName(name);
  if (store.dialect !== 'postgres') {
    const kind = store.dialect === 'pglite' ? 'PGlite' : 'MySQL';
    throw new ReplicationSlotNotFoundError(slot, null, `${kind} has no replication slots`);
  }
  let result: unknown;
  try {
    result = await store.knex.raw(DROP_SLOT, [slot]);
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === '55006') throw new ReplicationSlotActiveError(slot, activePid(error), error);
    // Dropped by someone else between the view's read and the drop.
    if (code === '42704') throw new ReplicationSlotNotFoundError(slot, null);
    throw error;
  }
  const row = rowsOf<{ database: string; dropped: number }>(result)[0];
  if (row === undefined || row.dropped === 0) {
    throw new ReplicationSlotNotFoundError(slot, row?.database ?? null);
  }
}
