import type { InboxRuntime } from '../runtime';
import { partitionKey, type PartitionRef } from '../sql/offsets';

/**
 * Watermarks this inbox knows were committed, per partition. Watermarks only rise, so a
 * record at or below a known one is done, whoever owns the partition now; one that is stale
 * (another consumer advanced the partition since, during a rebalance) costs nothing but a
 * refused compare-and-set, which then finds the records the other one handled. So a chunk
 * whose records are all above the known watermark goes straight to its transaction, and the
 * store is read only for a partition this inbox has not seen, or a chunk that starts at or
 * below what it knows (a seek back, a redelivery after a crash or a rebalance).
 */
const KNOWN = new WeakMap<InboxRuntime, Map<string, bigint>>();

/** The known watermarks of an inbox, by {@link partitionKey}. @internal */
export function knownMarks(rt: InboxRuntime): Map<string, bigint> {
  let marks = KNOWN.get(rt);
  if (marks === undefined) {
    marks = new Map();
    KNOWN.set(rt, marks);
  }
  return marks;
}

/** Notes a watermark read from the store or committed by this inbox. @internal */
export function noteMark(rt: InboxRuntime, partition: PartitionRef, mark: bigint): void {
  const marks = knownMarks(rt);
  const key = partitionKey(partition);
  const known = marks.get(key);
  if (known === undefined || mark > known) marks.set(key, mark);
}

/** What a transaction's watermarks will be once it commits, by {@link partitionKey}. @internal */
export type PendingMarks = Map<string, { readonly at: PartitionRef; mark: bigint }>;

/** Notes the watermarks of a transaction that committed. @internal */
export function noteCommitted(rt: InboxRuntime, pending: PendingMarks): void {
  for (const { at, mark } of pending.values()) noteMark(rt, at, mark);
}
