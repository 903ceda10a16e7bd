import type { DeadLetterFacts, Handler, Inbox, Logger, SettledEvent } from '@justonce/core';
import type { KafkaBatchContext, KafkaConsumerClient } from './client';
import type { KafkaDelivery } from './consumer';
import type { EnvelopeSettings } from './envelope';
import { createFirstDeliveryTracker, type FirstDeliveryTracker } from './first-delivery';
import type { Narrowing } from './narrowing';
import { closeBatchRun, commitOffset, mustStop, openBatchRun, revoked } from './batch-run';
import { chunkSize, narrow, recordsToHandle, retryLater } from './partition-pacing';
import { processOneByOne, processTogether } from './process-chunk';
import { emitSettled } from './settle-records';

/** What the batch processor needs from the consumer around it. @internal */
export interface ProcessorDeps<R> {
  readonly inbox: Inbox;
  readonly handler: Handler<R>;
  readonly mode: 'batch' | 'message';
  readonly batchSize: number;
  readonly envelope: EnvelopeSettings;
  readonly consumer: Pick<KafkaConsumerClient, 'seek'>;
  readonly heartbeatEveryMs: number;
  /** Counts group joins; a change means partitions may have been revoked. */
  readonly generation: () => number;
  /** Sends the record to its dead-letter topic; resolves to that topic's name. */
  readonly forwardDeadLetter: (delivery: KafkaDelivery, facts: DeadLetterFacts) => Promise<string>;
  readonly onSettled?: (event: SettledEvent<R, KafkaDelivery>) => void;
  readonly logger: Logger;
}

/**
 * The state of one batch processor, per topic-partition (keyed `topic\0partition`), shared
 * by the functions in `batch-run.ts`, `partition-pacing.ts`, `process-chunk.ts` and
 * `settle-records.ts`. @internal
 */
export interface ProcessorRuntime<R> {
  readonly deps: ProcessorDeps<R>;
  /** The offset a failed record must be retried from. */
  readonly retryFrom: Map<string, bigint>;
  /** Consecutive infrastructure failures (store outage, dead-letter topic), for the backoff. */
  readonly holds: Map<string, number>;
  /** Pending resumes of paused partitions. */
  readonly timers: Set<ReturnType<typeof setTimeout>>;
  /** What decides which records are declared first deliveries. */
  readonly firstDeliveries: FirstDeliveryTracker;
  /** A stretch taken in smaller chunks after a chunk failed as a whole. */
  readonly narrowed: Map<string, Narrowing>;
  /** The abort controllers of the batches under way, aborted by `halt`. */
  readonly running: Set<AbortController>;
  /** Set by `halt`: why no batch may go on or commit anything. */
  halted: Error | undefined;
}

/** The `eachBatch` handler of the consumer and what its lifecycle needs from it. @internal */
export interface BatchProcessor {
  eachBatch(context: KafkaBatchContext): Promise<void>;
  /** Forgets retry positions and partition state; called after the group was joined again. */
  reset(): void;
  /** Cancels pending resumes and forgets partition state; called when the consumer stopped. */
  dispose(): void;
  /**
   * Stops every batch at its next step, aborting handlers' signals; nothing more is
   * committed, so the records in flight are delivered again. For `stop({ drain: false })`.
   */
  halt(reason: string): void;
}

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
