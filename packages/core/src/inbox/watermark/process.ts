/**
 * The inbox in a watermark dedup mode (`dedup: 'watermark'` or `'watermark+ids'`): records at
 * or below their partition's watermark are duplicates before anything else happens; the
 * rest run in one transaction that advances the watermark by compare-and-set (see
 * `claim.ts`). Attempts are counted as in the `ids` mode, per message id and only for
 * deliveries the transport does not mark as first (see `needsCounting`), so a message that
 * crashes the process is still dead-lettered; first deliveries write no row of their own.
 */
import { poolRunner } from '../../transactions/sql';
import type { Envelope } from '../../transport/envelope';
import { attemptNumber, attemptToCount, needsCounting, settleByCount } from '../count';
import { settleExisting } from '../dedup';
import { inspectEnvelope } from '../inspect-envelope';
import { prepare, type Prepared } from '../prepare';
import { everyOutcome, inChunks } from '../chunks';
import { report } from '../process-one';
import { runHandler, settleTransactionFailure } from '../run-handler';
import type { InboxRuntime } from '../runtime';
import { countAttempts, type CountedAttempt } from '../sql/count-attempts';
import { finishBatch } from '../sql/finish-batch';
import { keyOf } from '../sql/message-key';
import { partitionKey, readWatermarks, type PartitionRef } from '../sql/offsets';
import { readRecords, type StoredRecord } from '../sql/read-records';
import type { GoodDelivery } from '../inspect-envelope';
import type { SqlRunner } from '../../transactions/sql';
import type { Handler, InboxOutcome } from '../types';
import { claimPlaced, duplicateOf, type ToClaim } from './claim';
import { knownMarks, noteCommitted, noteMark, type PendingMarks } from './known';
import { placeOf, type Placed } from './position';
import { countChunk } from './count-chunk';
import { heldBy, heldOutcome, noteOutcome, type FailedAt } from './hold';
import { refundAttempts } from '../sql/refund-attempts';
import { processTogether } from './together';

/** A validated delivery above its partition's watermark. @internal */
export interface LiveRecord {
  readonly index: number;
  readonly prepared: Prepared;
  readonly at: Placed;
}

/** Handles deliveries in a watermark mode; outcomes in input order. @internal */
export async function processWatermarked<R>(
  rt: InboxRuntime,
  envelopes: readonly Envelope[],
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<InboxOutcome<R>[]> {
  // Every position is checked before any chunk runs: a transport that gives none is refused
  // before anything is written.
  const { dedup } = rt.options;
  for (const envelope of envelopes) placeOf(envelope, dedup);
  // Chunks of as many deliveries per transaction as in the `ids` mode.
  return inChunks(envelopes, (chunk) => {
    const placed = chunk.map((envelope) => placeOf(envelope, dedup));
    return processChunk(rt, chunk, placed, handler, signal);
  });
}

/**
 * One chunk, with the position of each delivery: what its partitions' watermarks (known or
 * read in one statement) say are done is a duplicate with nothing written; the rest is
 * validated and run (see runLive).
 */
async function processChunk<R>(
  rt: InboxRuntime,
  envelopes: readonly Envelope[],
  placed: readonly Placed[],
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<InboxOutcome<R>[]> {
  const { store, consumer } = rt.options;
  const marks = knownMarks(rt);
  const toRead = new Map<string, PartitionRef>();
  for (const at of placed) {
    const known = marks.get(partitionKey(at));
    // Read what this inbox does not know, and when the chunk goes back to or below what it
    // knows (a seek back, a redelivery after a crash or a rebalance): see known.ts.
    if (known === undefined || at.offset <= known) toRead.set(partitionKey(at), at);
  }
  if (toRead.size > 0) {
    const read = await readWatermarks(poolRunner(store.knex), store.names, consumer, [
      ...toRead.values(),
    ]);
    for (const [key, at] of toRead) {
      const mark = read.get(key);
      if (mark !== undefined) noteMark(rt, at, mark);
    }
  }
  const outcomes = new Array<InboxOutcome<R> | undefined>(envelopes.length);
  const live: LiveRecord[] = [];
  const seen = new Set<string>();
  for (const [index, envelope] of envelopes.entries()) {
    const at = placed[index] as Placed;
    const mark = marks.get(partitionKey(at));
    const position = `${partitionKey(at)}\u0000${at.offset}`;
    if ((mark !== undefined && at.offset <= mark) || seen.has(position)) {
      // Done already (or the same record twice in one batch): nothing is read or written.
      const inspected = inspectEnvelope(envelope, rt.options);
      const messageId = inspected.ok ? inspected.messageId : (inspected.rawId ?? '');
      outcomes[index] = await report(rt, duplicateOf(messageId, inspected.scope), envelope.body);
      continue;
    }
    seen.add(position);
    const prepared = await prepare(rt, envelope);
    if ('settled' in prepared) outcomes[index] = await report(rt, prepared.settled, envelope.body);
    else live.push({ index, prepared, at });
  }
  await runLive(rt, placed, live, outcomes, handler, signal);
  return everyOutcome(outcomes);
}

/**
 * Runs a chunk's live deliveries, together or one per transaction, and holds back every
 * record of a partition after one that must be delivered again (see hold.ts).
 */
async function runLive<R>(
  rt: InboxRuntime,
  placed: readonly Placed[],
  live: readonly LiveRecord[],
  outcomes: Array<InboxOutcome<R> | undefined>,
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<void> {
  const failedAt: FailedAt = new Map();
  placed.forEach((at, index) => noteOutcome(failedAt, at, outcomes[index]));
  const hold = async (item: LiveRecord, attempt: number, failed: bigint): Promise<void> => {
    const { good } = item.prepared;
    const outcome = heldOutcome(good, item.at, attempt, failed);
    outcomes[item.index] = await report(rt, outcome, good.envelope.body);
  };
  const runnable =
    live.length > 1 && !repeatsIds(rt, live) ? await countChunk(rt, live, outcomes) : 'alone';
  if (runnable === 'alone') {
    for (const item of live) {
      const failed = heldBy(failedAt, item.at);
      if (failed !== undefined) {
        await hold(item, attemptNumber(undefined, item.prepared.ordinal), failed);
      } else {
        outcomes[item.index] = await processAlone(rt, item, handler, signal);
        noteOutcome(failedAt, item.at, outcomes[item.index]);
      }
    }
    return;
  }
  for (const item of live) noteOutcome(failedAt, item.at, outcomes[item.index]);
  const go = runnable.filter((item) => heldBy(failedAt, item.at) === undefined);
  const held = runnable.filter((item) => heldBy(failedAt, item.at) !== undefined);
  for (const item of held) await hold(item, item.attempt, heldBy(failedAt, item.at) as bigint);
  // A held delivery did not run: the attempt it was just charged is given back.
  const { store, consumer } = rt.options;
  const charged = held.filter((item) => item.counted).map((item) => item.prepared.good);
  await refundAttempts(store.knex, store.names, consumer, charged);
  if (go.length === 0) return;
  for (const [index, outcome] of await processTogether(rt, go, handler, signal)) {
    outcomes[index] = outcome;
  }
}

/**
 * With `watermark+ids`, one id twice in a chunk (a producer's copy): the chunk then runs one
 * delivery per transaction, so the second copy sees the first's record.
 */
function repeatsIds(rt: InboxRuntime, live: readonly LiveRecord[]): boolean {
  if (rt.options.dedup !== 'watermark+ids') return false;
  return new Set(live.map((item) => keyOf(item.prepared.good))).size < live.length;
}

/**
 * One delivery in its own transaction: count the attempt when the transport does not mark
 * it first (autocommit), then claim the watermark, run the handler and clear the counter in
 * one transaction.
 */
async function processAlone<R>(
  rt: InboxRuntime,
  item: LiveRecord,
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<InboxOutcome<R>> {
  const { good, payload, ordinal } = item.prepared;
  const { store, consumer, maxAttempts, transactions, dedup } = rt.options;
  const body = good.envelope.body;
  const counting = needsCounting(rt, ordinal);
  let stored: CountedAttempt | undefined;
  if (counting) {
    const counts = await countAttempts(store, consumer, maxAttempts, [
      attemptToCount(rt, good, ordinal),
    ]);
    stored = counts.get(keyOf(good));
  }
  const { attempt, settled } = await settleByCount(rt, good, ordinal, stored);
  if (settled !== undefined) return report(rt, settled, body);
  const claim: ToClaim = { index: item.index, good, at: item.at, attempt };
  const pending: PendingMarks = new Map();
  let outcome: InboxOutcome<R>;
  try {
    outcome = await transactions.transaction(async (trx): Promise<InboxOutcome<R>> => {
      const tx = transactions.enter(trx);
      const known = (await claimPlaced(rt, tx, [claim], pending)).get(item.index);
      if (counting) await finishBatch(tx, store.names, consumer, [good], []);
      if (known !== undefined) return known;
      const earlier = counting && dedup === 'watermark' ? await recordOf(rt, tx, good) : undefined;
      // A redelivery above the watermark may still have been settled with a record: one
      // dead-lettered as the last record before a crash, or one handled in the `ids` mode.
      if (earlier !== undefined) return settleExisting(rt, tx, good, attempt, undefined, earlier);
      return runHandler(rt, trx, tx, { good, payload, attempt }, handler, signal);
    });
  } catch (error) {
    return report(rt, await settleTransactionFailure(rt, error, good, attempt, counting), body);
  }
  noteCommitted(rt, pending);
  return report(rt, outcome, body);
}

/** The message's dedup record, if it has one (read in its transaction). */
async function recordOf(
  rt: InboxRuntime,
  tx: SqlRunner,
  good: GoodDelivery,
): Promise<StoredRecord | undefined> {
  const { store, consumer } = rt.options;
  return (await readRecords(tx, store.names, consumer, [good])).get(keyOf(good));
}
