/**
 * Which Kafka records may tell the inbox "this is a first delivery" (`redelivered: false`),
 * so that it skips its durable attempt-counting write.
 *
 * Kafka keeps no delivery count, so the inbox normally counts every delivery in autocommit
 * before the business transaction; that count is what dead-letters a record that crashes
 * the whole process on every delivery. A consumer may skip the write for a record only when
 * a crash during it is sure to be caught by a counted delivery later. Per assigned
 * partition, a consumer keeps what it has done since the partition was (re)assigned: whether
 * its last offset commit succeeded, the highest offset it has handed to the inbox (its
 * frontier), and how many records it has handed. A record is declared a first delivery only
 * when
 *
 * 1. the consumer has committed an offset on the partition since the assignment, and its
 *    last commit succeeded;
 * 2. the record's offset is above the frontier (not an in-process retry after a handler
 *    error, a seek back or a re-fetch: those are counted); and
 * 3. at least `countFirst` (the consumer's `batchSize`) records were handed on the partition
 *    since the assignment: the first chunk(s) after every assignment are always counted.
 *
 * Why that is safe: offsets are committed only after the chunk's database transaction
 * commits, after every chunk. A record that kills the process therefore sits in a chunk of
 * at most `batchSize` records that starts at the committed offset. The next owner of the
 * partition (or the restarted process) starts there, and its first `batchSize` records,
 * which include the crashing one, are counted. A crash loop without progress thus counts the
 * crashing record on every delivery after the first; a crash loop with progress only moves
 * the committed offset closer to the crashing record, which stays among the counted ones.
 * The cost: a record that crashes the process may be attempted `maxAttempts + 1` times before
 * it is dead-lettered (its first crash, on a declared delivery, is not counted). That bound
 * holds as long as the next owner's `batchSize` is not smaller than the crashed one's.
 *
 * Counted records carry no delivery facts at all (`redelivered` stays undefined): with facts
 * reported, the inbox would start a missing counter at 2, and the first chunk after an
 * assignment is mostly records nobody has seen. A declared delivery that fails in process
 * leaves a counter of 1 (the inbox records the error on it), so its retry counts 2; one that
 * crashed uncounted is counted from 1 — attempt numbers never jump.
 *
 * The group's rebalance (`GROUP_JOIN`), a failed commit and `stop()` forget or weaken the
 * state; forgetting only ever means counting more.
 *
 * @internal
 */

/** What a consumer knows about one partition since it was assigned. @internal */
export interface PartitionDeliveries {
  /** An offset commit succeeded since the assignment, and none failed after it. */
  readonly committed: boolean;
  /** The highest offset handed to the inbox since the assignment. */
  readonly frontier: bigint | undefined;
  /** Records handed to the inbox since the assignment, each counted once (above the frontier). */
  readonly handed: number;
}

/** A partition just (re)assigned: nothing handed, nothing committed. @internal */
export const JUST_ASSIGNED: PartitionDeliveries = {
  committed: false,
  frontier: undefined,
  handed: 0,
};

/**
 * Decides, for records about to be handed to the inbox in this order, which are first
 * deliveries, and returns the partition's state after handing them. Pure. @internal
 */
export function declareFirstDeliveries(
  state: PartitionDeliveries,
  offsets: readonly bigint[],
  countFirst: number,
): { readonly firsts: boolean[]; readonly state: PartitionDeliveries } {
  let { frontier, handed } = state;
  const firsts = offsets.map((offset) => {
    if (frontier !== undefined && offset <= frontier) return false;
    const first = state.committed && handed >= countFirst;
    frontier = offset;
    handed += 1;
    return first;
  });
  return { firsts, state: { committed: state.committed, frontier, handed } };
}

/** The partition's state after an offset commit succeeded (`ok`) or failed. Pure. @internal */
export function afterCommit(state: PartitionDeliveries, ok: boolean): PartitionDeliveries {
  return state.committed === ok ? state : { ...state, committed: ok };
}

/** Per topic-partition {@link PartitionDeliveries} of one consumer. @internal */
export interface FirstDeliveryTracker {
  /** Which of these records (in the order handed) are declared first deliveries. */
  hand(tp: string, offsets: readonly string[]): boolean[];
  /** Records the result of an offset commit on the partition. */
  committed(tp: string, ok: boolean): void;
  /** Forgets every partition: after a rebalance, and on stop. */
  reset(): void;
}

/** A {@link FirstDeliveryTracker} that never declares the first `countFirst` records. @internal */
export function createFirstDeliveryTracker(countFirst: number): FirstDeliveryTracker {
  const partitions = new Map<string, PartitionDeliveries>();
  return {
    hand(tp, offsets) {
      const next = declareFirstDeliveries(
        partitions.get(tp) ?? JUST_ASSIGNED,
        offsets.map((o) => BigInt(o)),
        countFirst,
      );
      partitions.set(tp, next.state);
      return next.firsts;
    },
    committed(tp, ok) {
      partitions.set(tp, afterCommit(partitions.get(tp) ?? JUST_ASSIGNED, ok));
    },
    reset() {
      partitions.clear();
    },
  };
}
