import type { Knex } from 'knex';
import { fullJitterBackoff } from '../retry/backoff';
import type { OutgoingMessage, PublishResult } from '../transport/publisher';
import type { PublishGate } from './publish-gate';
import type { ResolvedRelayOptions } from './options';
import { claimBatch, type ClaimedRow } from './sql/claim';
import { readFollowers } from './sql/followers';
import { claimByKeys, type KeyCursor } from './sql/scan-keys';
import { markFailed, markPublished, type FailureMark } from './sql/mark';
import type { CycleResult } from './types';

/** The longest error text kept in `last_error`. */
const MAX_ERROR_LENGTH = 2_000;

/** What the relay decided for each claimed row. @internal */
export interface Decisions {
  readonly published: string[];
  readonly failures: FailureMark[];
  readonly released: string[];
  /** Keys whose publisher result broke per-key order (a success after a failure). */
  readonly disorderedKeys: string[];
}

function toMessage(row: ClaimedRow): OutgoingMessage {
  const headers =
    typeof row.headers === 'string'
      ? (JSON.parse(row.headers) as Record<string, string>)
      : row.headers;
  return {
    messageId: row.message_id,
    destination: row.destination,
    key: row.partition_key,
    headers,
    payload: row.payload,
  };
}

function describe(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > MAX_ERROR_LENGTH ? text.slice(0, MAX_ERROR_LENGTH) : text;
}

/**
 * Turns publish results into marks. Per key, in id order: successes up to the first failure
 * are published; the first failure counts an attempt (backoff, or dead after the last one);
 * the rest of the key is released untouched, so a failing event holds back only its own key.
 * Events without a key are independent of each other. @internal
 */
export function decide(
  rows: readonly ClaimedRow[],
  outcome: readonly PublishResult[] | Error,
  options: Pick<ResolvedRelayOptions, 'maxAttempts' | 'backoff'>,
): Decisions {
  const published: string[] = [];
  const failures: FailureMark[] = [];
  const released: string[] = [];
  const disordered = new Set<string>();
  const blocked = new Set<string>();
  const failedCall = outcome instanceof Error ? outcome : null;
  const results = outcome instanceof Error ? [] : outcome;
  for (let i = 0; i < rows.length; i += 1) {
    const row = rows[i]!;
    let result: PublishResult | undefined = results[i];
    if (failedCall !== null) {
      result = { messageId: row.message_id, ok: false, error: failedCall, retriable: true };
    } else if (result === undefined || result.messageId !== row.message_id) {
      result = {
        messageId: row.message_id,
        ok: false,
        error: new Error('the publisher returned no result for this message'),
        retriable: true,
      };
    }
    const key = row.partition_key;
    if (key !== null && blocked.size > 0 && blocked.has(key)) {
      if (result.ok) {
        // Already out at the broker: record it, but the key's order is the publisher's fault.
        disordered.add(key);
        published.push(row.id);
      } else {
        released.push(row.id);
      }
      continue;
    }
    if (result.ok) {
      published.push(row.id);
      continue;
    }
    const attempt = row.attempts + 1;
    failures.push({
      id: row.id,
      error: describe(result.error),
      delayMs: fullJitterBackoff(attempt, options.backoff),
      dead: !result.retriable || attempt >= options.maxAttempts,
    });
    if (key !== null) blocked.add(key);
  }
  return { published, failures, released, disorderedKeys: [...disordered] };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`publish did not finish within ${ms} ms`)), ms);
    // A publish abandoned by a timed-out stop must not keep the process alive.
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

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

/** True if row id `a` is greater than row id `b` (both decimal, without leading zeros). */
export function idAfter(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
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
  /** The limit on publish calls in flight, or null. */
  readonly gate: PublishGate | null;
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
}

const EMPTY: CycleReport = {
  claimed: 0,
  published: 0,
  failed: 0,
  dead: 0,
  released: 0,
  nextRetryMs: null,
  full: false,
};

/** Publishes one batch; never rejects (a failed or timed-out call is the outcome). */
async function publishBatch(
  o: ResolvedRelayOptions,
  rows: readonly ClaimedRow[],
  gate: PublishGate | null,
): Promise<PublishResult[] | Error> {
  const release = gate ? await gate.acquire() : null;
  try {
    return await withTimeout(o.publisher.publish(rows.map(toMessage)), o.publishTimeoutMs);
  } catch (error) {
    o.logger.warn('relay: publish call failed', { error: describe(error), events: rows.length });
    return error instanceof Error ? error : new Error(String(error));
  } finally {
    release?.();
  }
}

/** Marks one batch's decisions in the claiming transaction; resolves to the counts. */
async function markBatch(
  o: ResolvedRelayOptions,
  trx: Knex.Transaction,
  d: Decisions,
): Promise<{ published: number; dead: number }> {
  const { names } = o.store;
  const published = await markPublished(trx, names, d.published, o.onPublished === 'delete');
  const dead = (await markFailed(trx, names, d.failures)).length;
  return { published, dead };
}

/** Moves each key's cursor to the last of its rows in `rows` (which are in id order). */
/** Row ids in ascending order (decimal text). */
function ascendingId(a: ClaimedRow, b: ClaimedRow): number {
  return a.id === b.id ? 0 : idAfter(a.id, b.id) ? 1 : -1;
}

/** Batches' worth of rows a held cycle reads ahead in one statement. */
const READ_AHEAD_BATCHES = 4;

function advance(cursors: Map<string, string>, rows: readonly ClaimedRow[]): void {
  for (const row of rows) if (row.partition_key !== null) cursors.set(row.partition_key, row.id);
}

/**
 * One claim → publish → mark cycle, in one transaction: the claim holds the keys' head rows
 * locked until the marks commit. If the process dies, its connection closes, PostgreSQL rolls
 * the transaction back and the events are claimable at once. On PostgreSQL the transaction
 * also carries `idle_in_transaction_session_timeout = leaseMs`, so a relay stuck in a publish
 * longer than that loses its session (and its claim) instead of holding keys forever.
 *
 * While batches come back full and `claimHoldMs` has not run out, the cycle keeps the keys it
 * holds and goes on with their next events: while one batch is at the broker, the next is
 * read and the one before is marked, on the transaction's connection, so the database's round
 * trips overlap the broker's instead of adding to them. A batch is published only after the
 * one before it has its results, and a key with a failure takes no further part in the cycle,
 * so order per key holds as in a single batch.
 *
 * @internal
 */
export async function runCycle(
  o: ResolvedRelayOptions,
  context: CycleContext,
): Promise<CycleReport> {
  const { store, logger } = o;
  const { track, cancelled, siblings, gate, keyCursor } = context;
  const trx = await store.knex.transaction();
  track(trx);
  // Promises this cycle started and has not awaited yet: if the cycle fails, they are
  // awaited (their errors dropped) before the rollback, so none rejects unobserved.
  const inFlight = new Set<Promise<unknown>>();
  const started = <T>(promise: Promise<T>): Promise<T> => {
    inFlight.add(promise);
    const settle = (): void => {
      inFlight.delete(promise);
    };
    promise.then(settle, settle);
    return promise;
  };
  try {
    // The connection may have taken a while to come (PGlite has only one): a relay that was
    // stopped meanwhile claims nothing.
    if (cancelled()) {
      await trx.rollback();
      return EMPTY;
    }
    // On PostgreSQL the claim statement itself also sets
    // idle_in_transaction_session_timeout = leaseMs for the rest of the transaction.
    const window = Math.max(MIN_WINDOW, o.batchSize * WINDOW_BATCHES);
    const claim = await claimBatch(trx, store.names, {
      limit: o.batchSize,
      window,
      after: siblings?.after() ?? null,
      leaseMs: store.dialect === 'postgres' ? o.leaseMs : null,
    });
    let rows = claim.rows;
    if (claim.windowFull && rows.length < o.batchSize) {
      // The oldest events' keys are held elsewhere or backing off: look for heads by key.
      const taken = new Set<string>();
      for (const row of rows) if (row.partition_key !== null) taken.add(row.partition_key);
      const more = await claimByKeys(
        trx,
        store.names,
        keyCursor,
        window,
        [...taken],
        o.batchSize - rows.length,
      );
      if (more.length > 0) rows = [...rows, ...more].sort(ascendingId);
    }
    siblings?.hold(lastHeadId(rows));
    if (rows.length === 0) {
      await trx.commit();
      return EMPTY;
    }
    const holdUntil = performance.now() + o.claimHoldMs;
    const cursors = new Map<string, string>();
    advance(cursors, rows);
    /** Keys with a failure in this cycle: they go no further until it commits. */
    const blocked = new Set<string>();
    const failures: FailureMark[] = [];
    const totals = { claimed: 0, published: 0, dead: 0, released: 0 };
    /** Rows read ahead and not published yet, in the order they may be published in. */
    let ready: ClaimedRow[] = [];
    /** Whether the held keys may have more: a claim that was not full has taken them all. */
    let more = rows.length >= o.batchSize;
    let reading: Promise<ClaimedRow[]> | null = null;
    const readLimit = o.batchSize * READ_AHEAD_BATCHES;
    let batch: readonly ClaimedRow[] = rows;
    let marking: Promise<{ published: number; dead: number }> | null = null;
    let full = false;
    for (;;) {
      totals.claimed += batch.length;
      full = batch.length >= o.batchSize;
      const publishing = publishBatch(o, batch, gate);
      const holding = performance.now() < holdUntil && !cancelled();
      // Read ahead while a batch is still in reserve, so the read has a whole publish to finish in.
      if (holding && more && reading === null && ready.length < o.batchSize * 2) {
        reading = started(readFollowers(trx, store.names, cursors, readLimit));
      }
      if (marking !== null) {
        const counts = await marking;
        totals.published += counts.published;
        totals.dead += counts.dead;
      }
      const d = decide(batch, await publishing, o);
      for (const key of d.disorderedKeys) {
        logger.warn('relay: publisher accepted a message after an earlier one of its key failed', {
          key,
        });
      }
      totals.released += d.released.length;
      failures.push(...d.failures);
      const byId = new Map(batch.map((row) => [row.id, row.partition_key]));
      for (const id of [...d.failures.map((f) => f.id), ...d.released]) {
        const key = byId.get(id);
        if (key != null) {
          blocked.add(key);
          cursors.delete(key);
        }
      }
      marking = started(markBatch(o, trx, d));
      if (!holding) break;
      if (reading !== null && ready.length < o.batchSize) {
        const read = await reading;
        reading = null;
        more = read.length >= readLimit;
        advance(cursors, read);
        ready.push(...read);
      }
      if (blocked.size > 0) ready = ready.filter((row) => !blocked.has(row.partition_key!));
      if (ready.length === 0) break;
      // The read order is (rank within key, id): any prefix of it takes a prefix of each key.
      batch = ready.splice(0, o.batchSize).sort(ascendingId);
    }
    const counts = await marking;
    totals.published += counts.published;
    totals.dead += counts.dead;
    // A read still running (the hold ended) is simply not used.
    await Promise.allSettled([...inFlight]);
    await trx.commit();
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
    };
  } catch (error) {
    await Promise.allSettled([...inFlight]);
    if (!trx.isCompleted()) await trx.rollback().catch(() => undefined);
    throw error;
  } finally {
    track(null);
    siblings?.hold(null);
  }
}
