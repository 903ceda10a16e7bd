import type { KafkaBatchContext } from '../../client/types';
import type { BatchProcessor, ProcessorDeps, ProcessorRuntime } from '../types';
import { createFirstDeliveryTracker } from './first-delivery';
import { closeBatchRun, commitOffset, mustStop, openBatchRun, revoked } from './run';
import { chunkSize, narrow, recordsToHandle, retryLater } from './partition-pacing';
import { processOneByOne, processTogether } from './chunk';
import { emitSettled } from '../settle';

/**
 * The one mechanism behind both consumer modes: an `eachBatch` handler that walks a
 * partition's batch in chunks of `batchSize` records. In `batch` mode a chunk is one inbox
 * transaction (`processBatch`); in `message` mode each record of the chunk is its own
 * transaction (`process`). After each chunk the offset after the last finished record is
 * committed — never before the database transaction that finished it has committed.
 *
 * A batch-mode chunk whose inbox call fails as a whole is retried in smaller chunks, down to
 * one record, so that a record that makes every call fail holds back only itself (see
 * `narrowing.ts`).
 *
 * Records are declared first deliveries (so the inbox skips counting them) by the rule in
 * `first-delivery.ts`: only after a successful offset commit on the partition since it was
 * assigned, above the highest offset already handed to the inbox, and past the first
 * `batchSize` records of the assignment.
 *
 * @internal
 */
export function createBatchProcessor<R>(deps: ProcessorDeps<R>): BatchProcessor {
  const runtime: ProcessorRuntime<R> = {
    deps,
    retryFrom: new Map(),
    holds: new Map(),
    timers: new Set(),
    firstDeliveries: createFirstDeliveryTracker(deps.batchSize),
    narrowed: new Map(),
    running: new Set(),
    halted: undefined,
    haltListeners: new Set(),
  };
  return {
    eachBatch: (context) => eachBatch(runtime, context),
    reset: () => {
      runtime.retryFrom.clear();
      runtime.narrowed.clear();
      runtime.firstDeliveries.reset();
    },
    dispose: () => {
      for (const timer of runtime.timers) clearTimeout(timer);
      runtime.timers.clear();
      runtime.narrowed.clear();
      runtime.firstDeliveries.reset();
    },
    halt: (reason) => {
      runtime.halted ??= new Error(reason);
      for (const abort of runtime.running) abort.abort(runtime.halted);
      for (const listener of runtime.haltListeners) listener(runtime.halted);
    },
  };
}

/**
 * One fetched batch of one partition: chunk by chunk, process, commit, report what was
 * settled; stop at the first record that must be delivered again (seek back to it and pause
 * the partition for its delay) or when the batch must stop.
 */
async function eachBatch<R>(runtime: ProcessorRuntime<R>, ctx: KafkaBatchContext): Promise<void> {
  const generation = runtime.deps.generation();
  const records = recordsToHandle(runtime, ctx, generation);
  if (records.length === 0) return;
  const run = openBatchRun(runtime, ctx, generation);
  try {
    for (let i = 0; i < records.length;) {
      if (mustStop(runtime, run)) break;
      const chunk = records.slice(i, i + chunkSize(runtime, run.tp, records, i));
      i += chunk.length;
      const result =
        runtime.deps.mode === 'batch'
          ? await processTogether(runtime, run, chunk)
          : await processOneByOne(runtime, run, chunk);
      emitSettled(runtime, run, result.settled, await commitOffset(runtime, run, result.done));
      // Halted: the consumer is stopping without draining; no seek, no pause, no more chunks.
      if (runtime.halted !== undefined) break;
      if (result.wholeChunkFailed && !revoked(runtime, run)) narrow(runtime, run, chunk);
      if (result.retry) {
        if (!revoked(runtime, run)) {
          retryLater(runtime, run, result.retry.offset, result.retry.delayMs);
        }
        break;
      }
      if (result.stopped) break;
    }
  } finally {
    closeBatchRun(runtime, run);
  }
  // Let the client rejoin the group (or handle the eviction) it was told about.
  if (run.heartbeatError !== undefined) throw run.heartbeatError;
}
