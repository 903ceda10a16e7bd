import { sleep } from '../../common/time';
import { ConfigurationError } from '../../errors/configuration-error';
import { JustonceError } from '../../errors/justonce-error';
import type { Logger } from '../../observability/logger';
import { rowsOf } from '../../store/rows';
import type { Store } from '../../store/store';
import type { RelayRuntime } from '../runtime';
import { ensureBoundaryTable, insertBoundary, outboxSequence } from './cut-over';
import type { ResolvedLogOptions } from './options';
import type { LogTransaction } from './transactions';

/** A slot's hand-back to polling relays: the boundary id, and whether it is complete. */
export interface HandBackRecord {
  /** The highest outbox id drawn when the hand-back began: the log relay publishes up to it. */
  readonly boundary: bigint;
  /** True once every committed event up to `boundary` was published and marked so. */
  readonly done: boolean;
}

/** PostgreSQL's "undefined table": no hand-back was ever recorded in this schema. */
const UNDEFINED_TABLE = '42P01';

/** Rows marked published per statement, so that the bulk update never holds long locks. */
const MARK_BATCH = 5_000;

function handBackTable(store: Store): string {
  return store.names.table('relay_handback');
}

/** The slot's hand-back, or null when none was begun. @internal */
export async function readHandBack(store: Store, slot: string): Promise<HandBackRecord | null> {
  try {
    const row = rowsOf<{ boundary: string; done: boolean }>(
      await store.knex.raw(
        `select boundary::text as boundary, done from ${handBackTable(store)} where slot = ?`,
        [slot],
      ),
    )[0];
    return row === undefined ? null : { boundary: BigInt(row.boundary), done: row.done };
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === UNDEFINED_TABLE) return null;
    throw error;
  }
}

/**
 * The error for a slot already handed back: no log relay may read it again, or it would
 * publish what the polling relays publish. @internal
 */
export function handedBackError(slot: string): ConfigurationError {
  return new ConfigurationError(
    `slot ${slot} was handed back to polling relays: a log relay reads it no more (give log.slot a new name to switch to the log mode again)`,
    { slot, handedBack: true },
  );
}

/** True for {@link handedBackError}. @internal */
export function isHandedBack(error: unknown): boolean {
  return error instanceof ConfigurationError && error.details.handedBack === true;
}

/**
 * Begins the hand-back, once per slot: records the id sequence's last value as the boundary.
 * Any id drawn later belongs to the polling relays; ids up to it to the log relay, which must
 * see every transaction that drew one end before it may finish. Resolves to the boundary
 * (the recorded one when a hand-back had begun already). @internal
 */
export async function beginHandBack(store: Store, log: ResolvedLogOptions): Promise<bigint> {
  const t = handBackTable(store);
  const recorded = await readHandBack(store, log.slot);
  if (recorded !== null) return recorded.boundary;
  await ensureBoundaryTable(store.knex, t);
  const seq = await outboxSequence(store, log.slot, 'stop({ handBackToPolling })');
  await insertBoundary(store.knex, t, seq, log.slot);
  return (await readHandBack(store, log.slot))!.boundary;
}

/**
 * Finishes the hand-back once the log relay published every committed event up to the
 * boundary: marks their rows published (pending ones only: dead stay dead), in bounded
 * statements in id order, then records it as done. Safe to run again after a crash: a row
 * marked already is not pending. Resolves to the rows it marked. @internal
 */
export async function finishHandBack(
  store: Store,
  log: ResolvedLogOptions,
  boundary: bigint,
): Promise<number> {
  const outbox = store.names.table('outbox');
  let total = 0;
  for (;;) {
    const marked = rowsOf<{ n: number }>(
      await store.knex.raw(
        `with marked as (
           update ${outbox} set status = 'published', published_at = statement_timestamp()
            where id in (select id from ${outbox}
                          where status = 'pending' and id <= ? order by id limit ?)
           returning 1)
         select count(*)::int as n from marked`,
        [boundary.toString(), MARK_BATCH],
      ),
    )[0]!.n;
    total += marked;
    if (marked < MARK_BATCH) break;
  }
  await store.knex.raw(`update ${handBackTable(store)} set done = true where slot = ?`, [log.slot]);
  return total;
}

/**
 * The error of a `stop({ handBackToPolling: true })` that did not finish (not running, or
 * `timeoutMs` ran out): the polling relays must not start yet. A hand-back that began is
 * finished by the next log relay that reads the slot. @internal
 */
export function handBackIncomplete(log: ResolvedLogOptions, timeoutMs: number): JustonceError {
  return new JustonceError(
    'HAND_BACK_INCOMPLETE',
    `the hand-back of slot ${log.slot} to polling did not finish: start the log relay and stop it with handBackToPolling again before any polling relay starts`,
    { retriable: true, details: { slot: log.slot, timeoutMs } },
  );
}

/**
 * Drops the slot of a finished hand-back, which would otherwise keep WAL for nobody. A
 * standby may hold it for a moment (it lets go once it reads the hand-back's record): the
 * drop is tried again for a while, then left to the operator with a warning. @internal
 */
export async function dropHandedBackSlot(
  store: Store,
  log: ResolvedLogOptions,
  logger: Logger,
): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await store.knex.raw(
        `select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = ?`,
        [log.slot],
      );
      return;
    } catch (error) {
      if (attempt >= 50) {
        logger.warn('relay: could not drop the handed-back slot; drop it by hand', {
          slot: log.slot,
          error: String(error),
        });
        return;
      }
      await sleep(100);
    }
  }
}

/**
 * A session's part in a hand-back: whether it must hand back (asked, or a dead reader began
 * one), and once it began, the boundary above which events are the polling relays'. @internal
 */
export class SessionHandBack {
  /** Set once the hand-back began in this session. */
  boundary: bigint | null = null;
  private resume = false;

  constructor(private readonly requested: () => boolean) {}

  /** True when this session must hand back. */
  get wanted(): boolean {
    return this.resume || this.requested();
  }

  /**
   * Reads the slot's hand-back, once the session holds the slot (so that none can finish
   * under it): throws {@link handedBackError} when it is done; one begun is resumed.
   */
  async open(store: Store, slot: string): Promise<void> {
    const record = await readHandBack(store, slot);
    if (record?.done === true) throw handedBackError(slot);
    this.resume = record !== null;
  }

  /**
   * Begins (or resumes) the hand-back: records or reads the boundary, and drops the events
   * above it from what is queued (`keep`); what comes later is filtered by the session. Resolves
   * to the events dropped.
   */
  async begin(
    store: Store,
    log: ResolvedLogOptions,
    queue: LogTransaction[],
    keep: (t: LogTransaction, upTo: bigint) => LogTransaction,
  ): Promise<number> {
    const boundary = await beginHandBack(store, log);
    this.boundary = boundary;
    let dropped = 0;
    for (const [i, t] of queue.entries()) {
      queue[i] = keep(t, boundary);
      dropped += t.events.length - queue[i]!.events.length;
    }
    return dropped;
  }

  /** Finishes the hand-back once the session's marker is confirmed. */
  async finish(rt: RelayRuntime, log: ResolvedLogOptions): Promise<'handed back'> {
    const boundary = this.boundary!;
    const marked = await finishHandBack(rt.options.store, log, boundary);
    rt.options.logger.info('relay: handed the outbox back to polling', {
      slot: log.slot,
      boundary: boundary.toString(),
      marked,
    });
    return 'handed back';
  }
}
