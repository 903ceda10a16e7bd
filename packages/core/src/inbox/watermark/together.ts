import { asError } from '../../common/errors';
import type { SqlTransaction } from '../../transactions/types';
import { handlerContext } from '../context';
import { isInfrastructureFailure, storeOutage } from '../outage';
import { assertUsable, report } from '../process-one';
import type { InboxRuntime } from '../runtime';
import { settleFailure } from '../settle-failure';
import { finishBatch } from '../sql/finish-batch';
import { partitionKey, setWatermark } from '../sql/offsets';
import type { Handler, InboxOutcome } from '../types';
import { claimPlaced, type ToClaim } from './claim';
import type { Runnable } from './count-chunk';
import { heldOutcome } from './hold';
import { noteCommitted, type PendingMarks } from './known';
import { settleExisting } from '../dedup';
import { keyOf } from '../sql/message-key';
import { readRecords } from '../sql/read-records';
import { refundAttempts } from '../sql/refund-attempts';

type RunResult<R> =
  | { readonly kind: 'processed'; readonly result: R }
  | { readonly kind: 'settled'; readonly outcome: InboxOutcome<never> }
  | { readonly kind: 'failed'; readonly error: Error }
  | { readonly kind: 'held'; readonly failedOffset: bigint };

/** The savepoint around each handler of an isolated pass. */
const SAVEPOINT = 'justonce_handler';

/** Thrown inside the optimistic pass to roll it back and run the batch again isolated. */
class IsolateAndRetry {}

/**
 * First deliveries of a chunk in one transaction that advances each partition's watermark
 * once. The first pass runs the handlers straight; if one fails, it rolls back and the batch
 * runs again with each handler in a savepoint. There, once a record of a partition fails,
 * the partition's later records are held (not run, redelivered after it), and the watermark
 * is set just below the failed record: a record above the watermark whose effects committed
 * would run again on its redelivery. Returns the outcomes by delivery index. @internal
 */
export async function processTogether<R>(
  rt: InboxRuntime,
  runnable: readonly Runnable[],
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<Map<number, InboxOutcome<R>>> {
  const items: Item[] = runnable.map((item) => ({ ...item, good: item.prepared.good }));
  let results: Map<number, RunResult<R>>;
  try {
    try {
      results = await runTransaction(rt, items, handler, signal, false);
    } catch (error) {
      if (!(error instanceof IsolateAndRetry)) throw error;
      results = await runTransaction(rt, items, handler, signal, true);
    }
  } catch (error) {
    // The inbox's own statements or the commit failed: an outage is not the messages'.
    if (!isInfrastructureFailure(rt, error, false)) throw error;
    const charged = items.filter((i) => i.counted).map((i) => i.good);
    throw await storeOutage(rt, error, charged);
  }
  // A held delivery did not run: the attempt it was charged is given back.
  const { store, consumer } = rt.options;
  const heldCounted = items.filter((i) => i.counted && results.get(i.index)?.kind === 'held');
  await refundAttempts(
    store.knex,
    store.names,
    consumer,
    heldCounted.map((i) => i.good),
  );
  const outcomes = new Map<number, InboxOutcome<R>>();
  for (const item of items) {
    const result = results.get(item.index);
    if (result === undefined) throw new Error('batch lost a message result');
    const base = { messageId: item.good.messageId, scope: item.good.scope };
    const outcome: InboxOutcome<R> =
      result.kind === 'processed'
        ? { status: 'processed', ...base, attempt: item.attempt, result: result.result }
        : result.kind === 'settled'
          ? result.outcome
          : result.kind === 'held'
            ? heldOutcome(item.good, item.at, item.attempt, result.failedOffset)
            : await settleFailure(rt, item.good, item.attempt, result.error, item.counted);
    outcomes.set(item.index, await report(rt, outcome, item.good.envelope.body));
  }
  return outcomes;
}

/** A delivery of the chunk's transaction. */
type Item = ToClaim & Runnable;

function isDone(result: RunResult<unknown> | undefined): boolean {
  return result?.kind === 'processed' || result?.kind === 'settled';
}

/**
 * In `watermark` mode, the counted deliveries (possible redeliveries) above the watermark
 * that have an id record all the same are settled by it: one dead-lettered as the last
 * record before a crash, or one handled earlier in the `ids` mode. One read, only when some
 * delivery was counted.
 */
async function settleRecorded<R>(
  rt: InboxRuntime,
  tx: SqlTransaction,
  items: readonly Item[],
  results: Map<number, RunResult<R>>,
): Promise<void> {
  const { store, consumer, dedup } = rt.options;
  if (dedup !== 'watermark') return;
  const counted = items.filter((i) => i.counted && !results.has(i.index));
  if (counted.length === 0) return;
  const records = await readRecords(
    tx,
    store.names,
    consumer,
    counted.map((i) => i.good),
  );
  for (const item of counted) {
    const record = records.get(keyOf(item.good));
    if (record === undefined) continue;
    const outcome = await settleExisting(rt, tx, item.good, item.attempt, undefined, record);
    results.set(item.index, { kind: 'settled', outcome });
  }
}

async function runTransaction<R>(
  rt: InboxRuntime,
  items: readonly Item[],
  handler: Handler<R, unknown>,
  signal: AbortSignal,
  isolate: boolean,
): Promise<Map<number, RunResult<R>>> {
  const { store, consumer, transactions } = rt.options;
  const pending: PendingMarks = new Map();
  const results = await transactions.transaction(async (trx) => {
    const tx = transactions.enter(trx);
    const results = new Map<number, RunResult<R>>();
    for (const [index, outcome] of await claimPlaced(rt, tx, items, pending)) {
      results.set(index, { kind: 'settled', outcome });
    }
    await settleRecorded(rt, tx, items, results);
    /** The first failed offset of each partition that has one. */
    const failedAt = new Map<string, bigint>();
    for (const item of items) {
      if (results.has(item.index)) continue;
      const failed = failedAt.get(partitionKey(item.at));
      if (failed !== undefined) {
        results.set(item.index, { kind: 'held', failedOffset: failed });
        continue;
      }
      const result = await runHandler(rt, trx, tx, item, handler, signal, isolate);
      results.set(item.index, result);
      if (result.kind === 'failed') failedAt.set(partitionKey(item.at), item.at.offset);
      else await rt.step('handler-done', item.good.messageId);
    }
    const done = items.filter((i) => i.counted && isDone(results.get(i.index)));
    if (done.length > 0) {
      await finishBatch(
        tx,
        store.names,
        consumer,
        done.map((i) => i.good),
        [],
      );
    }
    if (failedAt.size === 0) return results;
    for (const item of items) {
      const failed = failedAt.get(partitionKey(item.at));
      if (failed === item.at.offset) {
        await setWatermark(tx, store.names, consumer, item.at, failed - 1n);
        pending.set(partitionKey(item.at), { at: item.at, mark: failed - 1n });
      }
    }
    if (rt.options.dedup === 'watermark+ids') {
      const undone = items.filter((i) => {
        const kind = results.get(i.index)?.kind;
        return kind === 'failed' || kind === 'held';
      });
      await finishBatch(
        tx,
        store.names,
        consumer,
        [],
        undone.map((i) => i.good),
      );
    }
    return results;
  });
  noteCommitted(rt, pending);
  return results;
}

/**
 * Runs one handler: straight in the transaction (a failure rolls the pass back for an
 * isolated one), or in its own savepoint.
 */
async function runHandler<R>(
  rt: InboxRuntime,
  trx: unknown,
  tx: SqlTransaction,
  item: Item,
  handler: Handler<R, unknown>,
  signal: AbortSignal,
  isolate: boolean,
): Promise<RunResult<R>> {
  const started = performance.now();
  const context = handlerContext(
    rt.options,
    trx,
    tx,
    item.good,
    item.prepared.payload,
    item.attempt,
    signal,
  );
  // A savepoint in SQL rather than the library's nested transaction, so that it works the
  // same through every adapter.
  if (isolate) await tx.query(`savepoint ${SAVEPOINT}`, []);
  try {
    const result = await handler(context);
    await assertUsable(tx);
    if (isolate) await tx.query(`release savepoint ${SAVEPOINT}`, []);
    rt.instruments.handlerDuration((performance.now() - started) / 1000, true);
    return { kind: 'processed', result };
  } catch (error) {
    rt.instruments.handlerDuration((performance.now() - started) / 1000, false);
    if (!isolate) throw new IsolateAndRetry();
    await tx.query(`rollback to savepoint ${SAVEPOINT}`, []);
    await tx.query(`release savepoint ${SAVEPOINT}`, []);
    return { kind: 'failed', error: asError(error) };
  }
}
