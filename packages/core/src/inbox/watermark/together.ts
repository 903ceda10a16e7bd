import type { SqlTransaction } from '../../transactions/types';
import {
  passOutcome,
  runInPass,
  runPasses,
  type PassRun,
  type RunResult as PassResult,
} from '../batch-passes';
import { settleByRecords } from '../dedup';
import { report } from '../process-one';
import type { InboxRuntime } from '../runtime';
import { finishBatch } from '../sql/finish-batch';
import { partitionKey, setWatermark } from '../sql/offsets';
import { refundAttempts } from '../sql/refund-attempts';
import type { Handler, InboxOutcome } from '../types';
import { claimPlaced, type ToClaim } from './claim';
import type { Runnable } from './count-chunk';
import { heldOutcome } from './hold';
import { noteCommitted, type PendingMarks } from './known';

type RunResult<R> = PassResult<R> | { readonly kind: 'held'; readonly failedOffset: bigint };

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
  const items: Item[] = runnable.map((item) => ({
    ...item,
    good: item.prepared.good,
    payload: item.prepared.payload,
  }));
  const results = await runPasses(rt, items, false, (isolate) =>
    runTransaction(rt, items, { handler, signal, isolate }),
  );
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
    const outcome: InboxOutcome<R> =
      result?.kind === 'held'
        ? heldOutcome(item.good, item.at, item.attempt, result.failedOffset)
        : await passOutcome(rt, item, result);
    outcomes.set(item.index, await report(rt, outcome, item.good.envelope.body));
  }
  return outcomes;
}

/** A delivery of the chunk's transaction. */
type Item = ToClaim & Runnable & { readonly payload: unknown };

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
  if (rt.options.dedup !== 'watermark') return;
  const counted = items.filter((i) => i.counted && !results.has(i.index));
  for (const [index, outcome] of await settleByRecords(rt, tx, counted, true)) {
    results.set(index, { kind: 'settled', outcome });
  }
}

/**
 * One pass of the chunk's transaction: claims the watermarks, settles what they or the id
 * records decide, runs the rest's handlers (holding a partition's records after a failed
 * one) and clears the attempt counters of those done.
 */
async function runTransaction<R>(
  rt: InboxRuntime,
  items: readonly Item[],
  pass: PassRun<R>,
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
      const result = await runInPass(rt, trx, tx, item, pass);
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
