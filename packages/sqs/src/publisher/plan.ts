import type { PreparedEntry } from './entry';

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
 * Cuts the entries for one queue, in order, into batches of at most 10 entries and
 * `maxBytes` bytes, and links each batch to the last earlier batch of each of its keys, so
 * batches run in parallel across keys and in order within a key. @internal
 */
export function planBatches(
  queueUrl: string,
  entries: readonly PreparedEntry[],
  maxBytes: number,
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
  for (const entry of entries) {
    if (current.length === MAX_BATCH_ENTRIES || bytes + entry.bytes > maxBytes) close();
    current.push(entry);
    bytes += entry.bytes;
  }
  close();
  return batches;
}
