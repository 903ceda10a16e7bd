import type { PreparedEntry } from './prepared-entry';

/** Entries SQS takes in one `SendMessageBatch` request. */
export const MAX_BATCH_ENTRIES = 10;

/** One `SendMessageBatch` request to send, and the batches it must wait for. @internal */
export interface PlannedBatch {
  readonly queueUrl: string;
  readonly entries: readonly PreparedEntry[];
  /** Earlier batches to the same queue that share a partition key with this one. */
  readonly after: readonly PlannedBatch[];
}

/**
 * Cuts the entries for one queue into batches of at most 10 entries and `maxBytes` bytes,
 * and links each batch to the last earlier batch of each of its keys, so batches run in
 * parallel across keys and in order within a key. Each key's entries keep their order.
 *
 * A batch must wait for every earlier batch that holds one of its keys, so cutting entries in
 * call order, where keys take turns, can chain the batches: 25 keys with eight entries each
 * give twenty batches of one entry each of ten keys, every one waiting for the one or two
 * before it, ten deep, however many requests could be in flight. When keys repeat, their
 * consecutive entries are first gathered into runs (see {@link gatherRuns}), just long
 * enough that the chains are no deeper than the batches' turns at `concurrency` requests at
 * a time. @internal
 */
export function planBatches(
  queueUrl: string,
  entries: readonly PreparedEntry[],
  maxBytes: number,
  concurrency: number,
): PlannedBatch[] {
  const batches: PlannedBatch[] = [];
  const lastOfKey = new Map<string, PlannedBatch>();
  let current: PreparedEntry[] = [];
  let bytes = 0;
  const close = () => {
    if (current.length === 0) return;
    const after = new Set<PlannedBatch>();
    for (const { message } of current) {
      const previous = message.key === null ? undefined : lastOfKey.get(message.key);
      if (previous) after.add(previous);
    }
    const batch: PlannedBatch = { queueUrl, entries: current, after: [...after] };
    for (const { message } of current) if (message.key !== null) lastOfKey.set(message.key, batch);
    batches.push(batch);
    current = [];
    bytes = 0;
  };
  for (const entry of gatherRuns(entries, concurrency)) {
    if (current.length === MAX_BATCH_ENTRIES || bytes + entry.bytes > maxBytes) close();
    current.push(entry);
    bytes += entry.bytes;
  }
  close();
  return batches;
}

/**
 * `entries` reordered so that each key's entries come in runs of consecutive entries: the
 * first run of every key (keys in order of first appearance), then the second run of every
 * key, and so on. A key's entries keep their order; an entry without a key has none to keep
 * and goes with the first runs. A run is the longest key's entry count divided by the turns
 * the batches take at `concurrency` requests at a time (at most a batch), so no key needs
 * many more batches than there are turns. When no key repeats, nothing moves.
 * @internal
 */
export function gatherRuns(
  entries: readonly PreparedEntry[],
  concurrency: number,
): readonly PreparedEntry[] {
  const groups: PreparedEntry[][] = [];
  const byKey = new Map<string, PreparedEntry[]>();
  let longest = 1;
  for (const entry of entries) {
    const key = entry.message.key;
    if (key === null) {
      groups.push([entry]);
      continue;
    }
    const group = byKey.get(key);
    if (group) {
      group.push(entry);
      if (group.length > longest) longest = group.length;
    } else {
      const fresh = [entry];
      byKey.set(key, fresh);
      groups.push(fresh);
    }
  }
  if (longest === 1) return entries;
  const turns = Math.max(1, Math.ceil(entries.length / MAX_BATCH_ENTRIES / concurrency));
  const run = Math.min(MAX_BATCH_ENTRIES, Math.ceil(longest / turns));
  if (run === 1) return entries;
  const gathered: PreparedEntry[] = [];
  for (let start = 0; start < longest; start += run) {
    for (const group of groups) {
      const end = Math.min(start + run, group.length);
      for (let i = start; i < end; i++) gathered.push(group[i]!);
    }
  }
  return gathered;
}
