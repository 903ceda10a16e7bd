import type { SqlTransaction } from '../transactions/types';
import type { Envelope } from '../transport/envelope';
import {
  attemptNumber,
  attemptToCount,
  needsCounting,
  readsRecordFirst,
  settleExhausted,
} from './count';
import { handlerContext } from './context';
import { settleExisting, settleHandled } from './dedup';
import { isInfrastructureFailure, storeOutage } from './outage';
import { prepare, type Prepared } from './prepare';
import { assertUsable, processOne, processPrepared, report } from './process-one';
import { asError } from '../common/errors';
import type { InboxRuntime } from './runtime';
import { settleFailure } from './settle-failure';
import { claimMessages } from './sql/claim-messages';
import { countAttempts, type CountedAttempt } from './sql/count-attempts';
import { finishBatch } from './sql/finish-batch';
import { keyOf, type MessageKey } from './sql/message-key';
import { readChunk, readRecords } from './sql/read-records';
import { poolRunner } from '../transactions/sql';
import type { Handler, InboxOutcome } from './types';

/** Deliveries per transaction; a larger batch runs as several transactions in sequence. */
export const MAX_BATCH_SIZE = 1000;

interface Runnable extends Prepared {
  readonly index: number;
  readonly attempt: number;
  /** This delivery counted its attempt durably, so its counter is cleared when it is done. */
  readonly counted: boolean;
}

type RunResult<R> =
  | { readonly kind: 'processed'; readonly result: R }
  | { readonly kind: 'settled'; readonly outcome: InboxOutcome<never> }
  | { readonly kind: 'failed'; readonly error: Error };

/** The savepoint around each handler of an isolated pass. */
const SAVEPOINT = 'justonce_handler';

/** Thrown inside the optimistic pass to roll it back and run the batch again isolated. */
class IsolateAndRetry {}

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
  const outcomes: InboxOutcome<R>[] = [];
  for (let start = 0; start < envelopes.length; start += MAX_BATCH_SIZE) {
    const chunk = envelopes.slice(start, start + MAX_BATCH_SIZE);
    outcomes.push(...(await processChunk(rt, chunk, handler, signal)));
  }
  return outcomes;
}

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
          store.knex,
          store.names,
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
    let results: Map<number, RunResult<R>>;
    try {
      try {
        results = await runTransaction(rt, runnable, handler, signal, runnable.length === 1);
      } catch (error) {
        if (!(error instanceof IsolateAndRetry)) throw error;
        results = await runTransaction(rt, runnable, handler, signal, true);
      }
    } catch (error) {
      // The inbox's own statements or the commit failed: an outage is not the messages'.
      if (!isInfrastructureFailure(rt, error, false)) throw error;
      const charged = runnable.filter((r) => r.counted).map((r) => r.good);
      throw await storeOutage(rt, error, charged);
    }
    for (const item of runnable) {
      const result = results.get(item.index);
      if (result === undefined) throw new Error('batch lost a message result');
      const base = { messageId: item.good.messageId, scope: item.good.scope };
      const outcome: InboxOutcome<R> =
        result.kind === 'processed'
          ? { status: 'processed', ...base, attempt: item.attempt, result: result.result }
          : result.kind === 'settled'
            ? result.outcome
            : await settleFailure(rt, item.good, item.attempt, result.error, item.counted);
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
    store.names,
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
  return outcomes.map((o) => {
    if (o === undefined) throw new Error('batch left a delivery without an outcome');
    return o;
  });
}

function compareKeys(a: MessageKey, b: MessageKey): number {
  if (a.scope !== b.scope) return a.scope < b.scope ? -1 : 1;
  if (a.messageId === b.messageId) return 0;
  return a.messageId < b.messageId ? -1 : 1;
}

async function runTransaction<R>(
  rt: InboxRuntime,
  runnable: readonly Runnable[],
  handler: Handler<R, unknown>,
  signal: AbortSignal,
  isolate: boolean,
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
        .map((r) => ({
          scope: r.good.scope,
          messageId: r.good.messageId,
          fingerprint: r.good.fingerprint,
          attempt: r.attempt,
        })),
    );
    const taken = runnable.filter((r) => !claimed.has(keyOf(r.good)));
    if (taken.length > 0) {
      const records = await readRecords(
        tx,
        store.names,
        consumer,
        taken.map((r) => r.good),
      );
      for (const r of taken) {
        const outcome = await settleExisting(
          rt,
          tx,
          r.good,
          r.attempt,
          undefined,
          records.get(keyOf(r.good)),
        );
        results.set(r.index, { kind: 'settled', outcome });
      }
    }

    // Attempt counters to clear: only deliveries that counted can have one (a stray one from
    // an earlier delivery is removed by retention).
    const done: MessageKey[] = taken.filter((r) => r.counted).map((r) => r.good);
    const failed: MessageKey[] = [];
    for (const r of runnable) {
      if (!claimed.has(keyOf(r.good))) continue;
      if (isolate) {
        const result = await runIsolated(rt, trx, tx, r, handler, signal);
        results.set(r.index, result);
        if (result.kind === 'failed') failed.push(r.good);
        else if (r.counted) done.push(r.good);
      } else {
        const started = performance.now();
        try {
          const result = await handler(
            handlerContext(rt.options, trx, tx, r.good, r.payload, r.attempt, signal),
          );
          await assertUsable(tx);
          results.set(r.index, { kind: 'processed', result });
          if (r.counted) done.push(r.good);
        } catch {
          rt.instruments.handlerDuration((performance.now() - started) / 1000, false);
          throw new IsolateAndRetry();
        }
        rt.instruments.handlerDuration((performance.now() - started) / 1000, true);
      }
      await rt.step('handler-done', r.good.messageId);
    }
    await finishBatch(tx, store.names, consumer, done, failed);
    return results;
  });
}

async function runIsolated<R>(
  rt: InboxRuntime,
  trx: unknown,
  tx: SqlTransaction,
  r: Runnable,
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<RunResult<R>> {
  const started = performance.now();
  // A savepoint in SQL rather than the library's nested transaction, so that it works the same
  // through every adapter; the handler writes through the one transaction object it knows.
  await tx.query(`savepoint ${SAVEPOINT}`, []);
  try {
    const result = await handler(
      handlerContext(rt.options, trx, tx, r.good, r.payload, r.attempt, signal),
    );
    await assertUsable(tx);
    await tx.query(`release savepoint ${SAVEPOINT}`, []);
    rt.instruments.handlerDuration((performance.now() - started) / 1000, true);
    return { kind: 'processed', result };
  } catch (error) {
    rt.instruments.handlerDuration((performance.now() - started) / 1000, false);
    await tx.query(`rollback to savepoint ${SAVEPOINT}`, []);
    await tx.query(`release savepoint ${SAVEPOINT}`, []);
    return { kind: 'failed', error: asError(error) };
  }
}
