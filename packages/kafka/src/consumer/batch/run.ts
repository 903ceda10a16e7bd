import { asError, errorMessage } from '@justonce/core/transport';
import type { KafkaBatchContext } from '../../client/types';
import type { ProcessorRuntime } from '../types';

/** One `eachBatch` call under way: one partition's fetched records. @internal */
export interface BatchRun {
  readonly ctx: KafkaBatchContext;
  readonly topic: string;
  readonly partition: number;
  /** `topic\0partition`: the key of the processor's per-partition state. */
  readonly tp: string;
  /** The group generation when the batch began; a later one means it may be revoked. */
  readonly generation: number;
  /** Aborted once the batch must stop; handlers see it as `ctx.signal`. */
  readonly abort: AbortController;
  readonly beat: ReturnType<typeof setInterval>;
  /** The first failed heartbeat or offset commit: the batch stops and rethrows it. */
  heartbeatError: unknown;
  /** The last offset committed by this batch. */
  committed: string | undefined;
}

/** What became of the acknowledgement (offset commit) of a chunk's finished records. @internal */
export type AckResult =
  | { readonly action: 'acked' }
  | { readonly action: 'released' | 'abandoned'; readonly error: Error };

/** The key of a partition in the processor's maps. @internal */
export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

/**
 * Begins a batch: registers its abort controller (for `halt`) and heartbeats on a timer,
 * so that a long batch keeps the membership and finds out about a rebalance. @internal
 */
export function openBatchRun<R>(
  runtime: ProcessorRuntime<R>,
  ctx: KafkaBatchContext,
  generation: number,
): BatchRun {
  const { topic, partition } = ctx.batch;
  const abort = new AbortController();
  const run: BatchRun = {
    ctx,
    topic,
    partition,
    tp: partitionKey(topic, partition),
    generation,
    abort,
    heartbeatError: undefined,
    committed: undefined,
    beat: setInterval(() => {
      if (mustStop(runtime, run)) abort.abort();
      ctx.heartbeat().catch((error: unknown) => {
        run.heartbeatError ??= error;
        abort.abort();
      });
    }, runtime.deps.heartbeatEveryMs),
  };
  runtime.running.add(abort);
  if (runtime.halted !== undefined) abort.abort(runtime.halted);
  return run;
}

/** Ends a batch: no more heartbeats from it. @internal */
export function closeBatchRun<R>(runtime: ProcessorRuntime<R>, run: BatchRun): void {
  clearInterval(run.beat);
  runtime.running.delete(run.abort);
}

/** The group was joined again since the batch began: the partition may be another member's. */
export function revoked<R>(runtime: ProcessorRuntime<R>, run: BatchRun): boolean {
  return runtime.deps.generation() !== run.generation;
}

/** The batch must not go on: the consumer stops, the partition was sought or revoked. */
export function mustStop<R>(runtime: ProcessorRuntime<R>, run: BatchRun): boolean {
  return (
    runtime.halted !== undefined ||
    !run.ctx.isRunning() ||
    run.ctx.isStale() ||
    run.heartbeatError !== undefined ||
    revoked(runtime, run)
  );
}

/**
 * Commits the offset after `offset` (the chunk's last finished record), and says what that
 * means for the chunk's finished records. Nothing is committed once the processor is halted
 * (they are released) or the group was joined again since the batch began (they are
 * abandoned: the partition may be another member's, and the broker refuses commits from an
 * old generation anyway). @internal
 */
export async function commitOffset<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  offset: string | undefined,
): Promise<AckResult> {
  if (runtime.halted !== undefined) return { action: 'released', error: runtime.halted };
  if (offset === undefined || offset === run.committed) return { action: 'acked' };
  if (revoked(runtime, run)) {
    return { action: 'abandoned', error: new Error('the partition was reassigned by a rebalance') };
  }
  const { ctx, topic, partition, tp } = run;
  ctx.resolveOffset(offset);
  try {
    await ctx.commitOffsetsIfNecessary({
      topics: [{ topic, partitions: [{ partition, offset: (BigInt(offset) + 1n).toString() }] }],
    });
    run.committed = offset;
    // After a rejoin the tracker was reset: this commit says nothing about the new assignment.
    if (!revoked(runtime, run)) runtime.firstDeliveries.committed(tp, true);
    return { action: 'acked' };
  } catch (error) {
    if (!revoked(runtime, run)) runtime.firstDeliveries.committed(tp, false);
    run.heartbeatError ??= error;
    runtime.deps.logger.warn('kafka offset commit failed; the records will be delivered again', {
      topic,
      partition,
      offset,
      error: errorMessage(error),
    });
    return { action: 'abandoned', error: asError(error) };
  }
}

/**
 * `work` (a chunk handed to the inbox), or the reason of the halt as soon as the processor is
 * halted (a stop without drain, or a drain past its time limit). Handlers see their signal
 * abort at the halt; one that ignores it goes on unwatched, so that the stop never waits for
 * it: its records are released (delivered again, and answered `duplicate` should it commit
 * after all), and whatever it ends with is ignored. @internal
 */
export function unlessHalted<R, T>(
  runtime: ProcessorRuntime<R>,
  work: Promise<T>,
): Promise<{ readonly value: T } | { readonly halted: Error }> {
  return new Promise((resolve, reject) => {
    const { halted } = runtime;
    if (halted !== undefined) {
      resolve({ halted });
      work.catch(() => undefined);
      return;
    }
    // A listener per chunk, removed when the chunk ends: nothing builds up on a consumer
    // that runs for months without a halt.
    const onHalt = (reason: Error): void => resolve({ halted: reason });
    runtime.haltListeners.add(onHalt);
    work.then(
      (value) => {
        runtime.haltListeners.delete(onHalt);
        resolve({ value });
      },
      (error: unknown) => {
        runtime.haltListeners.delete(onHalt);
        reject(error);
      },
    );
  });
}
