import type { Knex } from 'knex';
import { sleep } from '../../common/time';
import { ConfigurationError } from '../../errors/configuration-error';
import { rowsOf } from '../../store/rows';
import type { Store } from '../../store/store';
import type { RelayRuntime } from '../runtime';
import type { ClaimedRow } from '../sql/claimed-row';
import type { ResolvedLogOptions } from './options';
import { publishEvents, type Abandon } from './publish';

/** The cut-over's record of one slot: the boundary id, and whether the rows up to it are done. */
export interface CutOverBoundary {
  /** The highest outbox id any transaction could hold once the slot existed. */
  readonly boundary: bigint;
  /** True once every pending row with an id up to `boundary` was published or dead. */
  readonly done: boolean;
}

/** How often the wait for older transactions looks again. */
const WAIT_POLL_MS = 100;

function cutOverTable(store: Store): string {
  return store.names.table('relay_cutover');
}

/** Creates a table of one boundary per slot, when missing. @internal */
export async function ensureBoundaryTable(knex: Knex, table: string): Promise<void> {
  await knex.raw(`create table if not exists ${table} (
       slot text primary key,
       boundary bigint not null,
       done boolean not null default false,
       recorded_at timestamptz not null default now()
     )`);
}

/**
 * The outbox id sequence's qualified name, refused when it caches values per session: a
 * cached id up to a boundary read from it could be drawn by a transaction that starts after
 * the read. `option` names what needs it, for the error. @internal
 */
export async function outboxSequence(store: Store, slot: string, option: string): Promise<string> {
  const seq = rowsOf<{ seq: string | null; cache: string | number | null }>(
    await store.knex.raw(
      `select s.seq, (select seqcache from pg_sequence where seqrelid = s.seq::regclass) as cache
         from (select pg_get_serial_sequence(?, 'id') as seq) s`,
      [store.names.table('outbox')],
    ),
  )[0];
  if (seq?.seq === null || seq?.seq === undefined) {
    throw new ConfigurationError(`${option} needs the outbox id sequence`, { slot });
  }
  if (Number(seq.cache) !== 1) {
    throw new ConfigurationError(
      `${option} needs the outbox id sequence without a cache: alter sequence ${seq.seq} cache 1`,
      { slot, cache: Number(seq.cache) },
    );
  }
  return seq.seq;
}

/**
 * Records `slot`'s boundary in `table`, once: the id sequence's last value (`seq`, as
 * {@link outboxSequence} returned it: a quoted, qualified name). @internal
 */
export async function insertBoundary(
  knex: Knex,
  table: string,
  seq: string,
  slot: string,
): Promise<void> {
  await knex.raw(
    `insert into ${table} (slot, boundary)
     select ?, case when is_called then last_value else last_value - 1 end from ${seq}
     on conflict (slot) do nothing`,
    [slot],
  );
}

/**
 * Records the slot's boundary, once: the id sequence's last value, read after the slot
 * exists. Any id drawn later belongs to a transaction that commits after the slot's
 * consistent point, so it is in the slot; ids up to it are published from the table. The
 * table is created here rather than by a migration because only this option uses it. @internal
 */
export async function recordBoundary(store: Store, log: ResolvedLogOptions): Promise<void> {
  const t = cutOverTable(store);
  await ensureBoundaryTable(store.knex, t);
  if ((await readBoundary(store, log)) !== null) return;
  const seq = await outboxSequence(store, log.slot, 'log.takeOverFromPolling');
  await insertBoundary(store.knex, t, seq, log.slot);
}

/** The slot's recorded boundary, or null when none was recorded. @internal */
export async function readBoundary(
  store: Store,
  log: ResolvedLogOptions,
): Promise<CutOverBoundary | null> {
  const row = rowsOf<{ boundary: string | number; done: boolean }>(
    await store.knex.raw(
      `select boundary::text as boundary, done from ${cutOverTable(store)} where slot = ?`,
      [log.slot],
    ),
  )[0];
  return row === undefined ? null : { boundary: BigInt(row.boundary), done: row.done };
}

/**
 * Waits until every transaction running now has ended: one that drew an id up to the
 * boundary and has not committed is among them. Virtual transaction ids cover transactions
 * that drew an id before getting a transaction id; the snapshot's ids cover prepared ones.
 * Resolves to false when abandoned first. @internal
 */
export async function waitForRunningTransactions(knex: Knex, abandon: Abandon): Promise<boolean> {
  const now = rowsOf<{ vxids: string[] | null; snapshot: string }>(
    await knex.raw(
      `select (select array_agg(virtualxid::text) from pg_locks
                where locktype = 'virtualxid' and mode = 'ExclusiveLock' and granted
                  and pid is distinct from pg_backend_pid()) as vxids,
              pg_current_snapshot()::text as snapshot`,
    ),
  )[0]!;
  for (;;) {
    if (abandon.signal.aborted) return false;
    const left = rowsOf<{ running: string | number }>(
      await knex.raw(
        `select (select count(*) from pg_locks
                  where locktype = 'virtualxid' and granted and virtualxid::text = any(?::text[]))
              + (select count(*) from pg_snapshot_xip(?::pg_snapshot) x
                  where pg_xact_status(x) = 'in progress') as running`,
        [now.vxids ?? [], now.snapshot],
      ),
    )[0];
    if (Number(left?.running ?? 0) === 0) return true;
    await sleep(WAIT_POLL_MS, abandon.signal);
  }
}

/** The next pending rows up to the boundary, in id order, after `afterId`. */
async function leftoverBatch(
  store: Store,
  boundary: bigint,
  afterId: string,
  limit: number,
): Promise<ClaimedRow[]> {
  return rowsOf<ClaimedRow>(
    await store.knex.raw(
      // Ordered by the bigint column, not the text it is returned as.
      `select o.id::text as id, destination, partition_key, message_id, headers, payload, attempts
         from ${store.names.table('outbox')} o
        where status = 'pending' and o.id > ? and o.id <= ?
        order by o.id
        limit ?`,
      [afterId, boundary.toString(), limit],
    ),
  );
}

/**
 * Publishes what the stopped polling relays left: the pending rows up to the boundary, once
 * no transaction that could still add one is running, in id order (so per key) through the
 * log mode's publish path, each batch marked published (dead ones dead) before the next.
 * Then records the cut-over as done. Resolves to false when abandoned before the end; a
 * restart does the rest (a batch published and not yet marked goes out again, with the same
 * message ids). @internal
 */
export async function publishLeftovers(
  rt: RelayRuntime,
  log: ResolvedLogOptions,
  boundary: bigint,
  abandon: Abandon,
): Promise<boolean> {
  const { store, batchSize, logger } = rt.options;
  if (!(await waitForRunningTransactions(store.knex, abandon))) return false;
  let afterId = '0';
  let total = 0;
  for (;;) {
    const rows = await leftoverBatch(store, boundary, afterId, batchSize);
    if (rows.length === 0) break;
    if (!(await publishEvents(rt, rows, abandon))) return false;
    await store.knex.raw(
      `update ${store.names.table('outbox')}
          set status = 'published', published_at = statement_timestamp()
        where id = any(?::bigint[]) and status = 'pending'`,
      [rows.map((row) => row.id)],
    );
    total += rows.length;
    afterId = rows[rows.length - 1]!.id;
  }
  await store.knex.raw(`update ${cutOverTable(store)} set done = true where slot = ?`, [log.slot]);
  logger.info('relay: took over from polling', {
    slot: log.slot,
    boundary: boundary.toString(),
    published: total,
  });
  return true;
}
