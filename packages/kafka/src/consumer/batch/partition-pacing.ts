import { fullJitterBackoff } from '@justonce/core/retry';
import type { KafkaBatchContext, KafkaRecord } from '../../client/types';
import type { ProcessorRuntime } from '../types';
import { partitionKey, type BatchRun } from './run';
import { narrowAfterFailure, nextChunk } from './narrowing';

/**
 * The backoff of a paused partition. Capped low: once the store answers again, a paused
 * partition should find out within a few seconds, not after a 30 s backoff step drawn during
 * the outage. @internal
 */
export const HOLD_BACKOFF = { baseMs: 250, capMs: 3_000 };
/** The shortest pause of a partition. @internal */
export const MIN_HOLD_DELAY_MS = 100;

/** The next delay after an infrastructure failure on the partition (growing, jittered). @internal */
export function infraDelay<R>(runtime: ProcessorRuntime<R>, tp: string): number {
  const n = (runtime.holds.get(tp) ?? 0) + 1;
  runtime.holds.set(tp, n);
  return Math.max(MIN_HOLD_DELAY_MS, fullJitterBackoff(n, HOLD_BACKOFF));
}

/**
 * The records of a fetched batch to hand on: from the record awaiting its retry, if the
 * partition has one. A batch fetched before the seek back to it starts past that record:
 * none of it is handled, and the seek is made again. @internal
 */
export function recordsToHandle<R>(
  runtime: ProcessorRuntime<R>,
  ctx: KafkaBatchContext,
  generation: number,
): readonly KafkaRecord[] {
  const { topic, partition, messages } = ctx.batch;
  const tp = partitionKey(topic, partition);
  const pendingRetry = runtime.retryFrom.get(tp);
  if (pendingRetry === undefined) return messages;
  const first = messages[0];
  if (first === undefined || BigInt(first.offset) > pendingRetry) {
    if (!ctx.isStale() && runtime.deps.generation() === generation) {
      runtime.deps.consumer.seek({ topic, partition, offset: pendingRetry.toString() });
    }
    return [];
  }
  runtime.retryFrom.delete(tp);
  return messages.filter((r) => BigInt(r.offset) >= pendingRetry);
}

/**
 * Records in the next chunk from `records[start]`: `batchSize`, fewer within a stretch
 * narrowed after a whole-chunk failure (batch mode only; in message mode every record is
 * its own inbox call already). @internal
 */
export function chunkSize<R>(
  runtime: ProcessorRuntime<R>,
  tp: string,
  records: readonly KafkaRecord[],
  start: number,
): number {
  const { mode, batchSize } = runtime.deps;
  if (mode !== 'batch' || !runtime.narrowed.has(tp)) return batchSize;
  const ahead = records.slice(start, start + batchSize).map((r) => BigInt(r.offset));
  const next = nextChunk(runtime.narrowed.get(tp), ahead, batchSize);
  if (next.narrowing === undefined) runtime.narrowed.delete(tp);
  return next.size;
}

/** After `chunk` failed as a whole: take its stretch in chunks of half its size. @internal */
export function narrow<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  chunk: readonly KafkaRecord[],
): void {
  const before = runtime.narrowed.get(run.tp);
  const next = narrowAfterFailure(
    before,
    chunk.map((r) => BigInt(r.offset)),
  );
  runtime.narrowed.set(run.tp, next);
  // Down to one record, the failure itself is what the retry logged.
  if (before?.size === next.size && before.until === next.until) return;
  runtime.deps.logger.warn('kafka inbox batch failed as a whole; retrying it in smaller chunks', {
    topic: run.topic,
    partition: run.partition,
    from: chunk[0]?.offset,
    until: next.until.toString(),
    chunkSize: next.size,
  });
}

/**
 * Seeks back to `offset` and pauses the partition for `delayMs`: the record is delivered
 * again then. No sleeping in `eachBatch`, so heartbeats and other partitions go on. @internal
 */
export function retryLater<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  offset: string,
  delayMs: number,
): void {
  const { topic, partition, tp, ctx } = run;
  runtime.retryFrom.set(tp, BigInt(offset));
  runtime.deps.consumer.seek({ topic, partition, offset });
  const resume = ctx.pause();
  const timer = setTimeout(
    () => {
      runtime.timers.delete(timer);
      resume();
    },
    Math.max(0, delayMs),
  );
  runtime.timers.add(timer);
}
