/**
 * Narrowing a batch-mode chunk that fails as a whole down to the record that makes it fail.
 *
 * In batch mode a chunk is one `inbox.processBatch` call. When that call throws (rather
 * than returning a `failed` outcome for one record), nothing in the chunk is settled and
 * the whole chunk comes back. If one record makes the call throw every time, every record
 * of its chunk would come back with it for ever. So the stretch of the partition up to the
 * failed chunk's last offset is then taken in chunks of half the failed chunk's size;
 * another failure there halves again, down to one record. The good records commit (and
 * their offsets with them) chunk by chunk, in order, and only the bad record keeps coming
 * back. Past that stretch, chunks are `batchSize` again.
 *
 * The state lives in memory, per partition, and is forgotten on a rebalance and on stop:
 * forgetting only costs one more whole-chunk failure before narrowing again. A process that
 * dies inside a chunk (SIGKILL, out of memory) leaves no such state; what narrows the chunk
 * then is in the store: the inbox counted each record's attempt before the transaction that
 * died, and a batch that comes back with counted, unfinished attempts runs one record per
 * transaction, each counted just before it runs (core's `processBatch`). Either way only
 * the record that keeps failing uses up its attempts.
 *
 * @internal
 */

/** A stretch of a partition whose chunk failed as a whole, taken in smaller chunks. @internal */
export interface Narrowing {
  /** The last offset of the chunk that failed as a whole. */
  readonly until: bigint;
  /** Records per chunk up to `until` (at least 1). */
  readonly size: number;
}

/**
 * How many of the records at `offsets` (in order) the next chunk takes: `batchSize`, or
 * within a narrowed stretch at most its `size` and never past its end. `narrowing` comes
 * back `undefined` once the records start past the stretch. Pure. @internal
 */
export function nextChunk(
  narrowing: Narrowing | undefined,
  offsets: readonly bigint[],
  batchSize: number,
): { readonly size: number; readonly narrowing: Narrowing | undefined } {
  const first = offsets[0];
  if (narrowing === undefined || first === undefined || first > narrowing.until) {
    return { size: Math.min(batchSize, offsets.length), narrowing: undefined };
  }
  let size = 0;
  const most = Math.min(narrowing.size, batchSize, offsets.length);
  while (size < most && offsets[size]! <= narrowing.until) size += 1;
  return { size, narrowing };
}

/**
 * The narrowing after the chunk at `failed` (its offsets, in order) failed as a whole: half
 * its size (rounded up, at least 1), up to its last offset or the stretch's end, whichever
 * is further. Pure. @internal
 */
export function narrowAfterFailure(
  narrowing: Narrowing | undefined,
  failed: readonly bigint[],
): Narrowing {
  const last = failed[failed.length - 1] ?? -1n;
  return {
    until: narrowing !== undefined && narrowing.until > last ? narrowing.until : last,
    size: Math.max(1, Math.ceil(failed.length / 2)),
  };
}
