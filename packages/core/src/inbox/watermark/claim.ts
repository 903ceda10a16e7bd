import type { SqlRunner } from '../../transactions/sql';
import { settleByRecords } from '../dedup';
import type { GoodDelivery } from '../inspect-envelope';
import type { InboxRuntime } from '../runtime';
import { claimMessages, toClaim } from '../sql/claim-messages';
import { keyOf } from '../sql/message-key';
import { advanceWatermark, lockWatermark, partitionKey, setWatermark } from '../sql/offsets';
import type { InboxOutcome } from '../types';
import type { PendingMarks } from './known';
import type { Placed } from './position';

/** A delivery a watermark transaction claims. @internal */
export interface ToClaim {
  readonly index: number;
  readonly good: GoodDelivery;
  readonly at: Placed;
  readonly attempt: number;
}

/** A `duplicate` outcome for a delivery. @internal */
export function duplicateOf(messageId: string, scope: string): InboxOutcome<never> {
  return { status: 'duplicate', messageId, scope };
}

/**
 * Claims deliveries in a watermark mode, first thing in their transaction: per partition (in
 * topic and partition order, so two transactions lock rows in one order), the watermark's
 * compare-and-set from the partition's lowest offset to its highest. Refused (another
 * transaction advanced it past our first offset and committed), the row is locked and read:
 * the records at or below the new watermark are duplicates, the rest go on, and the
 * watermark is set to our highest offset. With `watermark+ids`, the id records of the rest
 * are inserted too (one multi-row insert, in key order), and a message whose record exists
 * is settled by it. Returns the settled outcomes by delivery index, and notes in `pending`
 * the watermark of each partition once the transaction commits. @internal
 */
export async function claimPlaced(
  rt: InboxRuntime,
  tx: SqlRunner,
  items: readonly ToClaim[],
  pending: PendingMarks,
): Promise<Map<number, InboxOutcome<never>>> {
  const { store, consumer, dedup, idRetentionMs } = rt.options;
  const settled = new Map<number, InboxOutcome<never>>();
  const groups = new Map<string, ToClaim[]>();
  for (const item of items) {
    const key = partitionKey(item.at);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [item]);
    else group.push(item);
  }
  const ordered = [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [key, group] of ordered) {
    const offsets = group.map((g) => g.at.offset);
    const first = offsets.reduce((a, b) => (b < a ? b : a));
    const last = offsets.reduce((a, b) => (b > a ? b : a));
    const at = (group[0] as ToClaim).at;
    if (await advanceWatermark(tx, store.names, consumer, at, first, last)) {
      pending.set(key, { at, mark: last });
      continue;
    }
    const mark = await lockWatermark(tx, store.names, consumer, at);
    for (const g of group) {
      if (g.at.offset <= mark) settled.set(g.index, duplicateOf(g.good.messageId, g.good.scope));
    }
    if (last > mark) await setWatermark(tx, store.names, consumer, at, last);
    pending.set(key, { at, mark: last > mark ? last : mark });
  }
  if (dedup !== 'watermark+ids') return settled;

  const rest = items
    .filter((i) => !settled.has(i.index))
    .sort((a, b) => (keyOf(a.good) < keyOf(b.good) ? -1 : keyOf(a.good) > keyOf(b.good) ? 1 : 0));
  if (rest.length === 0) return settled;
  const claimed = await claimMessages(
    tx,
    store.names,
    consumer,
    idRetentionMs,
    rest.map((r) => toClaim(r.good, r.attempt)),
  );
  const taken = rest.filter((r) => !claimed.has(keyOf(r.good)));
  for (const [index, outcome] of await settleByRecords(rt, tx, taken)) settled.set(index, outcome);
  return settled;
}
