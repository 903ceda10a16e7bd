import type { Message } from '@platformatic/kafka';

/** A message of the stream, with the default (byte) deserializers. */
export type StreamMessage = Message<Buffer, Buffer, Buffer, Buffer>;

/** What the feed needs of the library's message stream. */
export interface FeedStream {
  /** The next offset the stream fetches, per `topic:partition`; the feed moves it to seek. */
  readonly offsetsToFetch: Map<string, bigint>;
  pause(): unknown;
  resume(): unknown;
}

/** One partition as the feed sees it. @internal */
export interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  /** Assigned to this member by the last group join. */
  assigned: boolean;
  /** Counts seeks and joins: a batch begun before a change is stale. */
  seeks: number;
  /** Records received and not yet handed to a batch. */
  queue: StreamMessage[];
  /** A batch of the partition is under way. */
  busy: boolean;
  /** Holds on the partition (`pause`); its records are dropped while any is held. */
  holds: number;
  /** The offset after the last record queued. */
  position: bigint | undefined;
  /** Sought offset whose record has not arrived yet: everything else is dropped. */
  seekTo: bigint | undefined;
  /** Records past `seekTo` seen since the seek (a fetch from before it, or a gap in the log). */
  overshoots: number;
  /** Joined and not yet told where the stream reads from: every record is dropped. */
  awaitingOffsets: boolean;
  /** `seekTo` is the stream's refreshed position (not a seek): a later refresh replaces it. */
  seekFromRefresh: boolean;
  /** Holds the partition until `resume`. */
  pause(): void;
  /** Releases one hold; the partition is fetched again from where it stopped. */
  resume(): void;
}

/** Options of {@link createPartitionFeed}. */
export interface PartitionFeedOptions {
  /** Batches under way at once, one per partition at most. */
  readonly concurrency: number;
  /** The current stream; none while it is being opened again. */
  readonly stream: () => FeedStream | undefined;
  /** Starts a batch; the caller calls `done` once it is over. */
  readonly startBatch: (partition: PartitionState, records: StreamMessage[]) => void;
}

/** Sorts the stream's messages into per-partition batches. @internal */
export interface PartitionFeed {
  /** One message from the stream. */
  accept(message: StreamMessage): void;
  /** Fetches the partition from `offset` next; what was queued is dropped. */
  seek(topic: string, partition: number, offset: bigint): void;
  /** The state of a partition (created on first use, not assigned). */
  partition(topic: string, partition: number): PartitionState;
  /** A group join: the partitions now assigned; every other state is forgotten. */
  assign(assignments: ReadonlyArray<{ topic: string; partitions: readonly number[] }>): void;
  /** The batch of `partition` is over. */
  done(partition: PartitionState): void;
  /** The stream refreshed its positions (after a join): joined partitions read from there. */
  offsetsRefreshed(): void;
}

/**
 * A partition not assigned yet. `pause` adds a hold and calls `onHold`; the `resume` that
 * releases the last hold calls `onRelease`.
 */
function newPartitionState(
  topic: string,
  partition: number,
  onRelease: () => void,
  onHold: () => void,
): PartitionState {
  const p: PartitionState = {
    topic,
    partition,
    assigned: false,
    seeks: 0,
    queue: [],
    busy: false,
    holds: 0,
    position: undefined,
    seekTo: undefined,
    overshoots: 0,
    awaitingOffsets: false,
    seekFromRefresh: false,
    pause: () => {
      p.holds += 1;
      onHold();
    },
    resume: () => {
      if (p.holds === 0) return;
      p.holds -= 1;
      if (p.holds === 0) onRelease();
    },
  };
  return p;
}

/**
 * Records past a sought offset accepted as the next ones after this many fetches: only one
 * fetch per broker is under way, so by then the stream reads from the seek, and the record
 * sought is gone from the log (compacted, or a transaction marker).
 */
const MAX_OVERSHOOTS = 3;

/** The stream must pause: too much queued, or every assigned partition held. */
function shouldPause(
  partitions: ReadonlyMap<string, PartitionState>,
  queued: number,
  paused: boolean,
): boolean {
  const assigned = [...partitions.values()].filter((p) => p.assigned);
  if (assigned.length > 0 && assigned.every((p) => p.holds > 0)) return true;
  return queued >= QUEUE_HIGH_WATER || (paused && queued > QUEUE_HIGH_WATER / 2);
}

/** The stream's key of a partition (@platformatic/kafka's `topic:partition`). */
function keyOf(topic: string, partition: number): string {
  return `${topic}:${partition}`;
}

/**
 * After the stream refreshed its positions: each partition waiting since a join reads from
 * its refreshed position; a fetch from before the join may still answer, so until the record
 * there arrives everything else is dropped.
 */
function readFromRefreshedOffsets(
  partitions: ReadonlyMap<string, PartitionState>,
  stream: FeedStream | undefined,
): void {
  for (const [key, p] of partitions) {
    // A refresh queued behind another (two joins close together) reads newer commits.
    const replaces = p.seekFromRefresh && p.seekTo !== undefined;
    if (!p.awaitingOffsets && !replaces) continue;
    const from = stream?.offsetsToFetch.get(key);
    if (from === undefined) continue;
    p.awaitingOffsets = false;
    p.seekFromRefresh = true;
    p.seekTo = from;
    p.overshoots = 0;
    p.position = from;
  }
}

/**
 * What to do with the record at `offset` of an assigned partition: queue it, drop it (read
 * already, or before a sought offset), or drop it and set the stream back to the sought
 * offset (fetched from before a seek, or the partition is held: kept for the resume).
 * `reseeking` says a reseek is already due, so one fetch counts as one overshoot.
 */
function admit(p: PartitionState, offset: bigint, reseeking: boolean): 'queue' | 'drop' | 'reseek' {
  if (p.seekTo !== undefined) {
    if (offset < p.seekTo) return 'drop';
    if (offset > p.seekTo && p.overshoots < MAX_OVERSHOOTS) {
      if (!reseeking) p.overshoots += 1;
      return 'reseek';
    }
    p.seekTo = undefined;
    p.seekFromRefresh = false;
  } else if (p.position !== undefined && offset < p.position) {
    return 'drop';
  }
  if (p.holds > 0) {
    p.seekTo = offset;
    p.seekFromRefresh = false;
    return 'reseek';
  }
  return 'queue';
}

/** Records queued across partitions above which the stream is paused (half: resumed). */
const QUEUE_HIGH_WATER = 10_000;

/**
 * The feed between @platformatic/kafka's single message stream and `eachBatch`: a queue per
 * partition, one batch per partition at a time, at most `concurrency` at once; seeks and
 * holds applied to the stream's fetch position. @internal
 */
export function createPartitionFeed(options: PartitionFeedOptions): PartitionFeed {
  const partitions = new Map<string, PartitionState>();
  let queued = 0;
  let active = 0;
  let streamPaused = false;
  let dispatching: ReturnType<typeof setImmediate> | undefined;
  const reseeks = new Set<PartitionState>();

  /** Pauses the stream while too much is queued or every assigned partition is held. */
  const flow = (): void => {
    const stream = options.stream();
    if (stream === undefined) return;
    const pause = shouldPause(partitions, queued, streamPaused);
    if (pause === streamPaused) return;
    streamPaused = pause;
    if (pause) stream.pause();
    else stream.resume();
  };

  /** Sets the stream's position back to the sought offset, after the fetch under way. */
  const reseek = (p: PartitionState): void => {
    if (reseeks.has(p)) return;
    reseeks.add(p);
    // The stream sets its position after the records of a fetch were pushed: undo it after.
    process.nextTick(() => {
      reseeks.delete(p);
      if (p.seekTo !== undefined) setFetchOffset(p, p.seekTo);
    });
  };

  const setFetchOffset = (p: PartitionState, offset: bigint): void => {
    options.stream()?.offsetsToFetch.set(keyOf(p.topic, p.partition), offset);
  };
  const drop = (p: PartitionState): void => {
    queued -= p.queue.length;
    p.queue = [];
  };

  const dispatch = (): void => {
    dispatching = undefined;
    for (const p of partitions.values()) {
      if (active >= options.concurrency) break;
      if (!p.assigned || p.busy || p.holds > 0 || p.queue.length === 0) continue;
      const records = p.queue;
      drop(p);
      p.busy = true;
      active += 1;
      options.startBatch(p, records);
    }
    flow();
  };
  const scheduleDispatch = (): void => {
    dispatching ??= setImmediate(dispatch);
  };

  const partition = (topic: string, index: number): PartitionState => {
    const key = keyOf(topic, index);
    const existing = partitions.get(key);
    if (existing !== undefined) return existing;
    const p = newPartitionState(
      topic,
      index,
      () => {
        if (p.seekTo !== undefined) options.stream()?.offsetsToFetch.set(key, p.seekTo);
        flow();
        scheduleDispatch();
      },
      flow,
    );
    partitions.set(key, p);
    return p;
  };

  return {
    partition,
    accept(message) {
      const p = partition(message.topic, message.partition);
      if (!p.assigned || p.awaitingOffsets) return;
      const verdict = admit(p, message.offset, reseeks.has(p));
      if (verdict === 'drop') return;
      if (verdict === 'reseek') {
        reseek(p);
        return;
      }
      p.queue.push(message);
      p.position = message.offset + 1n;
      queued += 1;
      if (queued >= QUEUE_HIGH_WATER) flow();
      scheduleDispatch();
    },
    seek(topic, index, offset) {
      const p = partition(topic, index);
      p.seeks += 1;
      drop(p);
      p.seekTo = offset;
      p.seekFromRefresh = false;
      p.overshoots = 0;
      p.position = offset;
      setFetchOffset(p, offset);
      flow();
    },
    assign(assignments) {
      const now = new Set<string>();
      for (const { topic, partitions: list } of assignments) {
        for (const index of list) now.add(keyOf(topic, index));
      }
      for (const { topic, partitions: list } of assignments) {
        for (const index of list) partition(topic, index);
      }
      for (const [key, p] of partitions) {
        p.assigned = now.has(key);
        p.awaitingOffsets = p.assigned;
        p.seekFromRefresh = false;
        p.seeks += 1;
        drop(p);
        p.seekTo = undefined;
        p.position = undefined;
      }
      flow();
    },
    offsetsRefreshed: () => readFromRefreshedOffsets(partitions, options.stream()),
    done(p) {
      p.busy = false;
      active -= 1;
      flow();
      scheduleDispatch();
    },
  };
}
