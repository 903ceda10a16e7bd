import { crashPoint } from '../common/crash-points';
import type { Knex } from 'knex';
import { withTimeout } from '../common/time';
import type { PublishResult } from '../transport/publisher';
import { decide, lastError, toMessage, type Decisions } from './decide';
import type { ResolvedRelayOptions } from './options';
import type { PublishGate } from './publish-gate';
import { ascendingId } from './row-order';
import type { ClaimedRow } from './sql/claim';
import type { FailureMark } from './sql/mark';
import { relayStatements } from './statements';
import { publishSent } from './trace-send';

/** Batches' worth of rows a lane reads ahead in one statement. */
const READ_AHEAD_BATCHES = 4;

/** Publishes one batch; never rejects (a failed or timed-out call is the outcome). @internal */
export async function publishBatch(
  o: ResolvedRelayOptions,
  rows: readonly ClaimedRow[],
  gate: PublishGate,
): Promise<PublishResult[] | Error> {
  const release = await gate.acquire();
  try {
    const messages = rows.map(toMessage);
    return await publishSent(o.publisher, messages, () =>
      withTimeout(o.publisher.publish(messages), o.publishTimeoutMs, 'publish'),
    );
  } catch (error) {
    o.logger.warn('relay: publish call failed', { error: lastError(error), events: rows.length });
    return error instanceof Error ? error : new Error(String(error));
  } finally {
    release();
  }
}

/** Marks one batch's decisions in the claiming transaction; resolves to the counts. */
async function markBatch(
  o: ResolvedRelayOptions,
  trx: Knex.Transaction,
  batch: readonly ClaimedRow[],
  d: Decisions,
): Promise<{ published: number; dead: number }> {
  const remove = o.onPublished === 'delete';
  const marked = await relayStatements(o.claim).mark(trx, o.store, batch, d, remove);
  return { published: marked.published, dead: marked.dead.length };
}

/** Moves each key's cursor to the last of its rows in `rows` (each key's rows in id order). */
export function advance(cursors: Map<string, string>, rows: readonly ClaimedRow[]): void {
  for (const row of rows) if (row.partition_key !== null) cursors.set(row.partition_key, row.id);
}

/** What the lanes of one cycle share: its transaction, its limits and its tallies. @internal */
export interface LaneShared {
  readonly o: ResolvedRelayOptions;
  readonly trx: Knex.Transaction;
  readonly gate: PublishGate;
  /** When the hold ends (a `performance.now()` time). */
  readonly holdUntil: number;
  /** True once the relay is stopping (without drain) or another lane failed. */
  readonly stopped: () => boolean;
  /**
   * Runs `statements` on the cycle's connection after whatever was queued there before (one
   * query at a time: the driver must not be handed a query while another runs), and
   * registers it so a failing cycle can wait for it before rolling back.
   */
  readonly onConnection: <T>(statements: () => Promise<T>) => Promise<T>;
  readonly totals: { claimed: number; published: number; dead: number; released: number };
  readonly failures: FailureMark[];
}

/**
 * One lane of a cycle: a sequence of publish calls over its own keys, one in flight at a
 * time. It publishes `first`, then — while the hold lasts and its batches come back full —
 * the next events of its keys, oldest first: while a batch is at the broker it reads ahead
 * (about four batches' worth, each key after the last event read of it) and marks the batch
 * before, on the cycle's transaction, so the database's round trips overlap the broker's. A
 * batch goes out only after the one before it has its results, and a key with a failure
 * takes no further part, so per-key order holds as with one batch per claim. Resolves to
 * whether its last batch was full. @internal
 */
export async function runLane(
  shared: LaneShared,
  first: readonly ClaimedRow[],
  mayHaveMore: boolean,
): Promise<boolean> {
  const { o, trx, totals } = shared;
  const cursors = new Map<string, string>();
  advance(cursors, first);
  /** Keys with a failure in this cycle: they go no further until it commits. */
  const blocked = new Set<string>();
  /** Rows read ahead and not published yet, in the order they may be published in. */
  let ready: ClaimedRow[] = [];
  let more = mayHaveMore;
  let reading: Promise<ClaimedRow[]> | null = null;
  const readLimit = o.batchSize * READ_AHEAD_BATCHES;
  let batch: readonly ClaimedRow[] = first;
  let marking: Promise<{ published: number; dead: number }> | null = null;
  let full = false;
  const tally = (counts: { published: number; dead: number }): void => {
    totals.published += counts.published;
    totals.dead += counts.dead;
  };
  for (;;) {
    totals.claimed += batch.length;
    full = batch.length >= o.batchSize;
    const publishing = publishBatch(o, batch, shared.gate);
    const holding = performance.now() < shared.holdUntil && !shared.stopped();
    // Read ahead while a batch is still in reserve, so the read has a publish to finish in.
    if (holding && more && reading === null && ready.length < o.batchSize * 2) {
      const from = new Map(cursors);
      reading = shared.onConnection(() =>
        relayStatements(o.claim).readFollowers(trx, o.store, from, readLimit),
      );
    }
    if (marking !== null) tally(await marking);
    const d = decide(batch, await publishing, o);
    crashPoint('relay.after-publish');
    for (const key of d.disorderedKeys) {
      o.logger.warn('relay: publisher accepted a message after an earlier one of its key failed', {
        key,
      });
    }
    totals.released += d.released.length;
    shared.failures.push(...d.failures);
    for (const key of d.blockedKeys) {
      blocked.add(key);
      cursors.delete(key);
    }
    const marked = batch;
    marking = shared.onConnection(() => markBatch(o, trx, marked, d));
    if (!holding) break;
    if (reading !== null && ready.length < o.batchSize) {
      const read = await reading;
      reading = null;
      more = read.length >= readLimit;
      advance(cursors, read);
      ready.push(...read);
    }
    if (blocked.size > 0) ready = ready.filter((row) => !blocked.has(row.partition_key!));
    if (ready.length === 0 || shared.stopped()) break;
    // Each read is in id order, and a key's rows in a later read follow its rows in earlier
    // ones: any prefix of what is ready takes a prefix of each key.
    batch = ready.splice(0, o.batchSize).sort(ascendingId);
  }
  tally(await marking);
  return full;
}
