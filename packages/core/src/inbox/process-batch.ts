import { crashPoint } from '../common/crash-points';
import type { Envelope } from '../transport/envelope';
import {
  passOutcome,
  runInPass,
  runPasses,
  type BatchItem,
  type PassRun,
  type RunResult,
} from './batch-passes';
import { everyOutcome, inChunks } from './chunks';
import {
  attemptNumber,
  attemptToCount,
  needsCounting,
  readsRecordFirst,
  settleExhausted,
} from './count';
import { settleByRecords, settleHandled } from './dedup';
import { prepare, type Prepared } from './prepare';
import { processOne, processPrepared, report } from './process-one';
import type { InboxRuntime } from './runtime';
import { claimMessages, toClaim } from './sql/claim-messages';
import { countAttempts, type CountedAttempt } from './sql/count-attempts';
import { finishBatch } from './sql/finish-batch';
import { keyOf, type MessageKey } from './sql/message-key';
import { readChunk } from './sql/read-records';
import { poolRunner } from '../transactions/sql';
import type { Handler, InboxOutcome } from './types';

export { MAX_BATCH_SIZE } from './chunks';

interface Runnable extends Prepared, BatchItem {
  readonly index: number;
}

/**
 * Handles many deliveries in one transaction. Bad input, messages whose records say they were
 * handled (one read of the chunk's records, before any transaction) and exhausted messages are
 * settled first; the rest are claimed with one multi-row dedup insert, in key order (so two batches
 * never deadlock), and only the new ones reach the handler.
 *
 * The first pass runs every handler straight in the transaction. If one fails, that pass
 * rolls back and the batch runs again with each handler in its own savepoint: a failing
 * message's savepoint and dedup record are undone, the others commit once, and the failing
 * one then takes the retry / dead-letter path. A copy of an id seen earlier in the same batch
 * is handled after the batch commits, on its own, so it becomes a duplicate (or a conflict).
 * @internal
 */
export async function processBatch<R>(
  rt: InboxRuntime,
  envelopes: readonly Envelope[],
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<InboxOutcome<R>[]> {
  return inChunks(envelopes, (chunk) => processChunk(rt, chunk, handler, signal));
}

/** One chunk of a batch, in as few transactions as it safely can (see processBatch). */
async function processChunk<R>(
  rt: InboxRuntime,
  envelopes: readonly Envelope[],
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<InboxOutcome<R>[]> {
  const { store, consumer, maxAttempts } = rt.options;
  const outcomes = new Array<InboxOutcome<R> | undefined>(envelopes.length);
  const live: Live[] = [];
  const repeats: number[] = [];
  const seen = new Set<string>();

  for (const [index, envelope] of envelopes.entries()) {
    const prepared = await prepare(rt, envelope);
    if ('settled' in prepared) {
      outcomes[index] = await report(rt, prepared.settled, envelope.body);
      continue;
    }
    const key = keyOf(prepared.good);
    if (seen.has(key)) {
      repeats.push(index);
      continue;
    }
    seen.add(key);
    live.push({ index, prepared });
  }

  const { live: open, toCount, unfinished } = await settleKnownDuplicates(rt, live, outcomes);
  if (open.length > 1 && unfinished) {
    // An earlier delivery of some of these was counted and never finished: the process may
    // have died inside the batch's transaction. Counting the whole batch again would charge
    // every message for it, and a process-killing message would take its batch-mates to the
    // dead letters with it. One message per transaction instead, each counted just before it
    // runs: those before the killer commit, those after it are not counted until they run.
    for (const { index, prepared } of open) {
      const body = (envelopes[index] as Envelope).body;
      outcomes[index] = await processPrepared(rt, prepared, body, handler, signal);
    }
    return settleRepeats(rt, envelopes, outcomes, repeats, handler, signal);
  }
  const counted = new Set(toCount.map(({ index }) => index));
  const counts =
    toCount.length === 0
      ? new Map<string, CountedAttempt>()
      : await countAttempts(
          store,
          consumer,
          maxAttempts,
          // In key order, like the claim: two overlapping batches counting in delivery order
          // would lock the counters in opposite orders and deadlock.
          toCount
            .map(({ prepared }) => attemptToCount(rt, prepared.good, prepared.ordinal))
            .sort(compareKeys),
          // None of them had a counter: should the process die in this batch, the charge is
          // the batch's, and each message's next count alone makes it its own.
          toCount.length > 1,
        );
  const runnable: Runnable[] = [];
  for (const { index, prepared } of open) {
    const stored = counts.get(keyOf(prepared.good));
    const attempt = attemptNumber(stored, prepared.ordinal);
    await rt.step('attempt-counted', prepared.good.messageId);
    if (stored?.handled !== undefined) {
      // Committed already: the record decides, before any count is judged.
      outcomes[index] = await report(
        rt,
        await settleHandled(rt, prepared.good, attempt, stored.handled),
        prepared.good.envelope.body,
      );
    } else if (attempt > maxAttempts) {
      outcomes[index] = await report(
        rt,
        await settleExhausted(rt, prepared.good, attempt, stored, prepared.ordinal),
        prepared.good.envelope.body,
      );
    } else {
      runnable.push({
        good: prepared.good,
        payload: prepared.payload,
        ordinal: prepared.ordinal,
        index,
        attempt,
        counted: counted.has(index),
      });
    }
  }
  // Handlers run in delivery order (per-key order matters to the transports); only the
  // claim insert is sorted, so two overlapping batches lock rows in one order.

  if (runnable.length > 0) {
    const results = await runPasses(rt, runnable, runnable.length === 1, (isolate) =>
      runTransaction(rt, runnable, { handler, signal, isolate }),
    );
    for (const item of runnable) {
      const outcome = await passOutcome(rt, item, results.get(item.index));
      outcomes[item.index] = await report(rt, outcome, item.good.envelope.body);
    }
  }

  return settleRepeats(rt, envelopes, outcomes, repeats, handler, signal);
}

/** A delivery of a chunk that was validated and is not a copy of an earlier one in it. */
interface Live {
  readonly index: number;
  readonly prepared: Prepared;
}

/**
 * Reads a chunk's records in one statement before anything is counted or claimed, and settles
 * each message committed as handled as a duplicate (or, under another payload, a conflict)
 * with no transaction and no write, whatever the transport said of the delivery. Returns the
 * rest, those of them to count, and whether any of those has an unfinished attempt. A chunk of
 * one delivery is read as in {@link processPrepared}: first only when it is a reported
 * redelivery; otherwise its count (when it counts) reads its record, and a first delivery
 * goes straight to its claim.
 */
async function settleKnownDuplicates(
  rt: InboxRuntime,
  live: readonly Live[],
  outcomes: Array<InboxOutcome<unknown> | undefined>,
): Promise<{ live: readonly Live[]; toCount: readonly Live[]; unfinished: boolean }> {
  const { store, consumer } = rt.options;
  const toCount = live.filter(({ prepared }) => needsCounting(rt, prepared.ordinal));
  const [only] = live;
  if (only === undefined || (live.length === 1 && !readsRecordFirst(only.prepared.ordinal))) {
    return { live, toCount, unfinished: false };
  }
  const chunk = await readChunk(
    poolRunner(store.knex),
    store,
    consumer,
    live.map(({ prepared }) => prepared.good),
    toCount.map(({ prepared }) => prepared.good),
  );
  if (chunk.handled.size === 0) return { live, toCount, unfinished: chunk.unfinished };
  const open: Live[] = [];
  for (const item of live) {
    const { good, ordinal } = item.prepared;
    const record = chunk.handled.get(keyOf(good));
    if (record === undefined) {
      open.push(item);
      continue;
    }
    await rt.step('attempt-counted', good.messageId);
    const settled = await settleHandled(rt, good, attemptNumber(undefined, ordinal), record);
    outcomes[item.index] = await report(rt, settled, good.envelope.body);
  }
  return {
    live: open,
    toCount: toCount.filter(({ prepared }) => !chunk.handled.has(keyOf(prepared.good))),
    unfinished: chunk.unfinished,
  };
}

/**
 * Handles the copies of ids seen earlier in the batch, each on its own after the batch (so
 * each becomes a duplicate or a conflict), and returns the batch's outcomes in order.
 */
async function settleRepeats<R>(
  rt: InboxRuntime,
  envelopes: readonly Envelope[],
  outcomes: Array<InboxOutcome<R> | undefined>,
  repeats: readonly number[],
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<InboxOutcome<R>[]> {
  for (const index of repeats) {
    outcomes[index] = await processOne(rt, envelopes[index] as Envelope, handler, signal);
  }
  return everyOutcome(outcomes);
}

function compareKeys(a: MessageKey, b: MessageKey): number {
  if (a.scope !== b.scope) return a.scope < b.scope ? -1 : 1;
  if (a.messageId === b.messageId) return 0;
  return a.messageId < b.messageId ? -1 : 1;
}

/**
 * One pass of a chunk's transaction: claims its messages with one multi-row insert in key
 * order, settles those whose record exists, runs the handlers of the rest and clears the
 * attempt counters of those done.
 */
async function runTransaction<R>(
  rt: InboxRuntime,
  runnable: readonly Runnable[],
  pass: PassRun<R>,
): Promise<Map<number, RunResult<R>>> {
  const { store, consumer, retentionMs, transactions } = rt.options;
  return transactions.transaction(async (trx) => {
    const tx = transactions.enter(trx);
    const results = new Map<number, RunResult<R>>();
    const claimed = await claimMessages(
      tx,
      store.names,
      consumer,
      retentionMs,
      [...runnable]
        .sort((a, b) => compareKeys(a.good, b.good))
        .map((r) => toClaim(r.good, r.attempt)),
    );
    const taken = runnable.filter((r) => !claimed.has(keyOf(r.good)));
    for (const [index, outcome] of await settleByRecords(rt, tx, taken)) {
      results.set(index, { kind: 'settled', outcome });
    }

    // Attempt counters to clear: only deliveries that counted can have one (a stray one from
    // an earlier delivery is removed by retention).
    const done: MessageKey[] = taken.filter((r) => r.counted).map((r) => r.good);
    const failed: MessageKey[] = [];
    for (const r of runnable) {
      if (!claimed.has(keyOf(r.good))) continue;
      // Mid-batch: another handler's work is already in this open transaction.
      if (results.size > 0) crashPoint('batch.mid');
      // Straight in the pass, a failure rolls it back (thrown): only an isolated one fails here.
      const result = await runInPass(rt, trx, tx, r, pass);
      results.set(r.index, result);
      if (result.kind === 'failed') failed.push(r.good);
      else if (r.counted) done.push(r.good);
      await rt.step('handler-done', r.good.messageId);
    }
    crashPoint('inbox.after-handler');
    await finishBatch(tx, store.names, consumer, done, failed);
    return results;
  });
}
