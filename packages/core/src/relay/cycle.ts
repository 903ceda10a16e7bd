import { crashPoint } from '../common/crash-points';
import type { Knex } from 'knex';
import { runLane, type LaneShared } from './lane';
import { ascendingId, idAfter } from './row-order';
import type { PublishGate } from './publish-gate';
import type { ResolvedRelayOptions } from './options';
import type { ClaimedRow } from './sql/claim';
import { pauseWalks, walkPaused, type KeyCursor } from './sql/scan-keys';
import { relayStatements } from './statements';
import type { CycleResult } from './types';

/**
 * How the cycles of one relay keep out of each other's way: a claim may start after the last
 * head a sibling cycle holds (`after`), since every head before it was either taken by that
 * sibling or unavailable when it claimed; `hold` publishes this cycle's last head while its
 * transaction is open (null when it holds none). @internal
 */
export interface SiblingHint {
  after(): string | null;
  hold(lastHead: string | null): void;
}

/** The greatest id among the claimed heads (each key's first row), or null. @internal */
function lastHeadId(rows: readonly ClaimedRow[]): string | null {
  const seen = new Set<string>();
  let last: string | null = null;
  for (const row of rows) {
    const key = row.partition_key;
    if (key === null || seen.has(key)) continue;
    seen.add(key);
    if (last === null || idAfter(row.id, last)) last = row.id;
  }
  return last;
}

/** What a cycle shares with the relay that runs it. @internal */
export interface CycleContext {
  /** Called with the transaction while it is open (null after), so a timed-out stop can roll it back. */
  readonly track: (trx: Knex.Transaction | null) => void;
  /** Asked once the transaction has its connection, and before each further batch. */
  readonly cancelled: () => boolean;
  /** The sibling cycles of the same relay, or null. */
  readonly siblings: SiblingHint | null;
  /** The limit on publish calls in flight across the relay's cycles and lanes. */
  readonly gate: PublishGate;
  /** Where this relay's walk over keys stands (see `claimByKeys`). */
  readonly keyCursor: KeyCursor;
}

/**
 * Heads are looked for among the oldest `max(MIN_WINDOW, batchSize * WINDOW_BATCHES)` pending
 * keyed events; when those give too few, that many keys are walked.
 */
const MIN_WINDOW = 1_000;
const WINDOW_BATCHES = 4;

/** What a cycle reports back to the relay besides its counts. @internal */
export interface CycleReport extends CycleResult {
  /** Shortest backoff scheduled, when any event failed retriably. */
  readonly nextRetryMs: number | null;
  /** The cycle's last batch was full: there is probably more to claim. */
  readonly full: boolean;
  /**
   * The cycle claimed nothing though the claim's window was full: there is a backlog, and its
   * keys are held by other cycles or relays, or backing off.
   */
  readonly backlogHeld: boolean;
}

const EMPTY: CycleReport = {
  claimed: 0,
  published: 0,
  failed: 0,
  dead: 0,
  released: 0,
  nextRetryMs: null,
  full: false,
  backlogHeld: false,
};

/**
 * Splits a claim into up to `count` lanes by key, keys dealt round-robin in id order of their
 * first event (so the lanes get about as many keys each); events without a key go to the
 * first lane. @internal
 */
export function splitIntoLanes(rows: readonly ClaimedRow[], count: number): ClaimedRow[][] {
  const laneOf = new Map<string, number>();
  const lanes: ClaimedRow[][] = [[]];
  for (const row of rows) {
    const key = row.partition_key;
    if (key === null) {
      lanes[0]!.push(row);
      continue;
    }
    let lane = laneOf.get(key);
    if (lane === undefined) {
      lane = laneOf.size % count;
      laneOf.set(key, lane);
      lanes[lane] ??= [];
    }
    lanes[lane]!.push(row);
  }
  return lanes.filter((lane) => lane.length > 0);
}

/**
 * One claim → publish → mark cycle, in one transaction: the claim holds the keys' head rows
 * locked until the marks commit. If the process dies, its connection closes, PostgreSQL rolls
 * the transaction back and the events are claimable at once. On PostgreSQL the transaction
 * also carries `idle_in_transaction_session_timeout = leaseMs`, so a relay stuck in a publish
 * longer than that loses its session (and its claim) instead of holding keys forever.
 *
 * A full claim is held: split by key into lanes (see {@link runLane}), which go on with their
 * keys' next events while batches come back full and `claimHoldMs` has not run out, reading
 * ahead and marking on the transaction's connection while a batch is at the broker. A key
 * belongs to one lane, a lane publishes a batch only after the one before has its results,
 * and a key with a failure takes no further part, so order per key holds as in one batch.
 * The marks of a hold commit together at its end.
 *
 * @internal
 */
export async function runCycle(
  o: ResolvedRelayOptions,
  context: CycleContext,
): Promise<CycleReport> {
  const { store, logger } = o;
  const statements = relayStatements(o.claim);
  const { track, cancelled, siblings, gate, keyCursor } = context;
  const trx = await store.knex.transaction();
  track(trx);
  // Statements the lanes queued on the transaction's connection, run one at a time; if the
  // cycle fails, the queue is waited for (its errors dropped) before the rollback, so no
  // statement runs after it and none rejects unobserved.
  let queue: Promise<unknown> = Promise.resolve();
  const onConnection = <T>(statements: () => Promise<T>): Promise<T> => {
    const run = queue.then(statements, statements);
    queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  };
  try {
    // The connection may have taken a while to come (PGlite has only one): a relay that was
    // stopped meanwhile claims nothing.
    if (cancelled()) {
      await trx.rollback();
      return EMPTY;
    }
    // On PostgreSQL the claim statement itself also sets
    // idle_in_transaction_session_timeout = leaseMs for the rest of the transaction. MySQL
    // has no such per-transaction limit: there the claim lasts until the transaction ends,
    // bounded on MariaDB by the store's idle_transaction_timeout (timeouts.idleInTransactionMs,
    // set on every session) and on MySQL 8 only by the connection's end.
    const window = Math.max(MIN_WINDOW, o.batchSize * WINDOW_BATCHES);
    const claim = await statements.claim(trx, store, {
      limit: o.batchSize,
      window,
      after: siblings?.after() ?? null,
      leaseMs: store.dialect === 'postgres' ? o.leaseMs : null,
      minKeys: o.claimHoldMs > 0 ? o.maxConcurrentPublishes : 1,
    });
    let rows = claim.rows;
    if (claim.windowFull && rows.length < o.batchSize && !walkPaused(keyCursor)) {
      // The oldest events' keys are held elsewhere or backing off: look for heads by key.
      const taken = new Set<string>();
      for (const row of rows) if (row.partition_key !== null) taken.add(row.partition_key);
      const more = await statements.claimByKeys(
        trx,
        store,
        keyCursor,
        window,
        [...taken],
        o.batchSize - rows.length,
      );
      if (more.length > 0) rows = [...rows, ...more].sort(ascendingId);
      else if (keyCursor.key === null) pauseWalks(keyCursor, o.claimHoldMs);
    }
    siblings?.hold(lastHeadId(rows));
    if (rows.length > 0) crashPoint('relay.after-claim');
    if (rows.length === 0) {
      await trx.commit();
      return claim.windowFull ? { ...EMPTY, backlogHeld: true } : EMPTY;
    }
    let failed = false;
    const shared: LaneShared = {
      o,
      trx,
      gate,
      holdUntil: performance.now() + o.claimHoldMs,
      stopped: () => failed || cancelled(),
      onConnection,
      totals: { claimed: 0, published: 0, dead: 0, released: 0 },
      failures: [],
    };
    // A claim that was not full took everything its keys had: nothing to hold them for.
    const mayHaveMore = rows.length >= o.batchSize;
    // A full claim is held and published in lanes (one call in flight each, on its own keys),
    // as many as the relay has publish slots; anything smaller goes out in one call.
    const lanes = splitIntoLanes(
      rows,
      mayHaveMore && o.claimHoldMs > 0 ? o.maxConcurrentPublishes : 1,
    );
    const outcomes = await Promise.allSettled(
      lanes.map((first) =>
        runLane(shared, first, mayHaveMore).catch((error: unknown) => {
          failed = true;
          throw error;
        }),
      ),
    );
    for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
    const full = outcomes.some((outcome) => outcome.status === 'fulfilled' && outcome.value);
    // A read still queued or running (the hold ended) is simply not used.
    await queue;
    await trx.commit();
    const { totals, failures } = shared;
    for (const failure of failures) {
      logger[failure.dead ? 'error' : 'warn'](
        failure.dead ? 'relay: event is dead' : 'relay: publish failed; will retry',
        {
          id: failure.id,
          error: failure.error,
          retryInMs: failure.dead ? undefined : failure.delayMs,
        },
      );
    }
    const retrying = failures.filter((f) => !f.dead).map((f) => f.delayMs);
    return {
      ...totals,
      failed: failures.length,
      nextRetryMs: retrying.length > 0 ? Math.min(...retrying) : null,
      full,
      backlogHeld: false,
    };
  } catch (error) {
    await queue;
    if (!trx.isCompleted()) await trx.rollback().catch(() => undefined);
    throw error;
  } finally {
    track(null);
    siblings?.hold(null);
  }
}
