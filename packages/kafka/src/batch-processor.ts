import {
  fullJitterBackoff,
  hasErrorCode,
  type Envelope,
  type Handler,
  type Inbox,
  type InboxOutcome,
  type Logger,
} from '@justonce/core';
import type { KafkaBatchContext, KafkaConsumerClient, KafkaRecord } from './client';
import { toEnvelope, type EnvelopeSettings } from './envelope';
import type { DeadLetterReason } from './dead-letter';
import { createFirstDeliveryTracker } from './first-delivery';
import { narrowAfterFailure, nextChunk, type Narrowing } from './narrowing';

/** Where a record sits: reported beside every outcome. */
export interface RecordPosition {
  /** The topic. */
  readonly topic: string;
  /** The partition. */
  readonly partition: number;
  /** The offset, as a decimal string. */
  readonly offset: string;
}

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
  readonly forwardDeadLetter: (
    record: KafkaRecord,
    topic: string,
    partition: number,
    why: DeadLetterReason,
  ) => Promise<string>;
  readonly onOutcome?: (outcome: InboxOutcome<R>, position: RecordPosition) => void;
  readonly logger: Logger;
}

/** How a chunk ended. */
interface ChunkResult {
  /** Offset of the last record whose outcome is final (processed, duplicate, dead letter sent). */
  readonly done?: string;
  /** Set when a record must be delivered again: stop, seek back to it, pause the partition. */
  readonly retry?: { readonly offset: string; readonly delayMs: number };
  /** True when the batch must not go on (stopping, stale, revoked). */
  readonly stopped?: boolean;
  /** True when the inbox call failed for the chunk as a whole: nothing in it was settled. */
  readonly wholeChunkFailed?: boolean;
}

// Capped low: once the store answers again, a paused partition should find out within a
// few seconds, not after a 30 s backoff step drawn during the outage.
const INFRA_BACKOFF = { baseMs: 250, capMs: 3_000 };
const MIN_INFRA_DELAY_MS = 100;

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
export function createBatchProcessor<R>(deps: ProcessorDeps<R>): {
  eachBatch(context: KafkaBatchContext): Promise<void>;
  /** Forgets retry positions and partition state; called after the group was joined again. */
  reset(): void;
  /** Cancels pending resumes and forgets partition state; called when the consumer stops. */
  dispose(): void;
} {
  /** Per topic-partition: the offset a failed record must be retried from. */
  const retryFrom = new Map<string, bigint>();
  /** Per topic-partition: consecutive infrastructure failures (database, dead-letter topic). */
  const infraFailures = new Map<string, number>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  /** Per topic-partition: what decides which records are declared first deliveries. */
  const firstDeliveries = createFirstDeliveryTracker(deps.batchSize);
  /** Per topic-partition: a stretch taken in smaller chunks after a chunk failed as a whole. */
  const narrowed = new Map<string, Narrowing>();

  const infraDelay = (tp: string): number => {
    const n = (infraFailures.get(tp) ?? 0) + 1;
    infraFailures.set(tp, n);
    return Math.max(MIN_INFRA_DELAY_MS, fullJitterBackoff(n, INFRA_BACKOFF));
  };

  async function eachBatch(ctx: KafkaBatchContext): Promise<void> {
    const { topic, partition } = ctx.batch;
    const tp = `${topic}\u0000${partition}`;
    const startGeneration = deps.generation();
    let records = ctx.batch.messages;

    const pendingRetry = retryFrom.get(tp);
    if (pendingRetry !== undefined) {
      const first = records[0];
      if (first === undefined || BigInt(first.offset) > pendingRetry) {
        // A batch fetched before the seek: it starts past the record awaiting its retry.
        if (!ctx.isStale() && deps.generation() === startGeneration) {
          deps.consumer.seek({ topic, partition, offset: pendingRetry.toString() });
        }
        return;
      }
      retryFrom.delete(tp);
      records = records.filter((r) => BigInt(r.offset) >= pendingRetry);
    }
    if (records.length === 0) return;

    let heartbeatError: unknown;
    const revoked = (): boolean => deps.generation() !== startGeneration;
    const mustStop = (): boolean =>
      !ctx.isRunning() || ctx.isStale() || heartbeatError !== undefined || revoked();
    // Handlers see `ctx.signal` abort once the batch must stop (shutdown, stale, revoked).
    const abort = new AbortController();
    const callOptions = { signal: abort.signal };
    const beat = setInterval(() => {
      if (mustStop()) abort.abort();
      ctx.heartbeat().catch((error: unknown) => {
        heartbeatError ??= error;
        abort.abort();
      });
    }, deps.heartbeatEveryMs);

    let committed: string | undefined;
    const commit = async (offset: string | undefined): Promise<void> => {
      // A rejoin since this batch began may have handed the partition to another member:
      // commit nothing for it. The broker itself refuses commits from an old generation.
      if (offset === undefined || offset === committed || revoked()) return;
      ctx.resolveOffset(offset);
      try {
        await ctx.commitOffsetsIfNecessary({
          topics: [
            { topic, partitions: [{ partition, offset: (BigInt(offset) + 1n).toString() }] },
          ],
        });
        committed = offset;
        // After a rejoin the tracker was reset: this commit says nothing about the new assignment.
        if (!revoked()) firstDeliveries.committed(tp, true);
      } catch (error) {
        if (!revoked()) firstDeliveries.committed(tp, false);
        heartbeatError ??= error;
        deps.logger.warn('kafka offset commit failed; the records will be delivered again', {
          topic,
          partition,
          offset,
          error: errorMessage(error),
        });
      }
    };

    const report = (outcome: InboxOutcome<R>, record: KafkaRecord): void => {
      const position = { topic, partition, offset: record.offset };
      if (outcome.status === 'failed') {
        deps.logger.warn('kafka record failed; it will be retried', {
          ...position,
          messageId: outcome.messageId,
          attempt: outcome.attempt,
          retryDelayMs: outcome.retryDelayMs,
          error: outcome.error.message,
        });
      } else if (outcome.status === 'dead-lettered') {
        deps.logger.error('kafka record dead-lettered', {
          ...position,
          messageId: outcome.messageId,
          reason: outcome.reason,
          error: outcome.error.message,
        });
      }
      if (deps.onOutcome) {
        try {
          deps.onOutcome(outcome, position);
        } catch (error) {
          deps.logger.warn('onOutcome listener threw', { error: errorMessage(error) });
        }
      }
    };

    /** Sends a dead letter on; false when the dead-letter topic did not take it. */
    const forward = async (
      outcome: Extract<InboxOutcome<R>, { status: 'dead-lettered' }>,
      record: KafkaRecord,
    ): Promise<boolean> => {
      try {
        await deps.forwardDeadLetter(record, topic, partition, {
          reason: outcome.reason,
          error: outcome.error,
          attempt: outcome.attempt,
          deadLetterId: outcome.deadLetterId,
          consumer: deps.inbox.consumer,
        });
        return true;
      } catch (error) {
        deps.logger.error('kafka dead-letter forward failed; the record will be retried', {
          topic,
          partition,
          offset: record.offset,
          error: errorMessage(error),
        });
        return false;
      }
    };

    /** The envelopes of records about to be handed to the inbox, in that order. */
    const envelopesOf = (chunk: readonly KafkaRecord[]): Envelope[] => {
      const firsts = revoked()
        ? chunk.map(() => false)
        : firstDeliveries.hand(
            tp,
            chunk.map((r) => r.offset),
          );
      return chunk.map((record, i) =>
        toEnvelope(record, topic, partition, deps.envelope, firsts[i]),
      );
    };

    async function oneByOne(chunk: readonly KafkaRecord[]): Promise<ChunkResult> {
      let done: string | undefined;
      for (const record of chunk) {
        if (mustStop()) return { done, stopped: true };
        let outcome: InboxOutcome<R>;
        try {
          outcome = await deps.inbox.process(envelopesOf([record])[0]!, deps.handler, callOptions);
        } catch (error) {
          deps.logger.error('kafka inbox call failed; the record will be retried', {
            topic,
            partition,
            offset: record.offset,
            error: errorMessage(error),
          });
          return { done, retry: { offset: record.offset, delayMs: infraDelay(tp) } };
        }
        report(outcome, record);
        if (outcome.status === 'failed') {
          return { done, retry: { offset: record.offset, delayMs: outcome.retryDelayMs } };
        }
        if (outcome.status === 'dead-lettered' && !(await forward(outcome, record))) {
          return { done, retry: { offset: record.offset, delayMs: infraDelay(tp) } };
        }
        infraFailures.delete(tp);
        done = record.offset;
      }
      return { done };
    }

    async function together(chunk: readonly KafkaRecord[]): Promise<ChunkResult> {
      let outcomes: InboxOutcome<R>[];
      try {
        outcomes = await deps.inbox.processBatch(envelopesOf(chunk), deps.handler, callOptions);
      } catch (error) {
        deps.logger.error('kafka inbox batch failed; the records will be retried', {
          topic,
          partition,
          offset: chunk[0]?.offset,
          error: errorMessage(error),
        });
        return {
          retry: { offset: chunk[0]!.offset, delayMs: infraDelay(tp) },
          // An outage of the store says nothing about the records: no narrowing for it.
          wholeChunkFailed: !hasErrorCode(error, 'STORE_UNAVAILABLE'),
        };
      }
      let failedAt: number | undefined;
      let delayMs = 0;
      let deadLetterTopicDown = false;
      for (let i = 0; i < chunk.length; i++) {
        const outcome = outcomes[i]!;
        const record = chunk[i]!;
        report(outcome, record);
        if (outcome.status === 'failed' && failedAt === undefined) {
          failedAt = i;
          delayMs = outcome.retryDelayMs;
        } else if (outcome.status === 'dead-lettered' && !deadLetterTopicDown) {
          // Dead letters are final in the store: forward each even past a failed record,
          // so none depends on how a redelivery of it would be answered.
          if (!(await forward(outcome, record))) {
            deadLetterTopicDown = true;
            if (failedAt === undefined || i < failedAt) {
              failedAt = i;
              delayMs = infraDelay(tp);
            }
          }
        }
      }
      if (failedAt === undefined) {
        infraFailures.delete(tp);
        return { done: chunk[chunk.length - 1]!.offset };
      }
      return {
        done: failedAt > 0 ? chunk[failedAt - 1]!.offset : undefined,
        retry: { offset: chunk[failedAt]!.offset, delayMs },
      };
    }

    try {
      for (let i = 0; i < records.length;) {
        if (mustStop()) break;
        const chunk = records.slice(i, i + chunkSize(tp, records, i));
        i += chunk.length;
        const result = deps.mode === 'batch' ? await together(chunk) : await oneByOne(chunk);
        await commit(result.done);
        if (result.wholeChunkFailed && !revoked()) narrow(ctx, tp, chunk);
        if (result.retry) {
          if (!revoked()) retryLater(ctx, tp, result.retry.offset, result.retry.delayMs);
          break;
        }
        if (result.stopped) break;
      }
    } finally {
      clearInterval(beat);
    }
    // Let the client rejoin the group (or handle the eviction) it was told about.
    if (heartbeatError !== undefined) throw heartbeatError;
  }

  /**
   * Records in the next chunk from `records[start]`: `batchSize`, fewer within a stretch
   * narrowed after a whole-chunk failure (batch mode only; in message mode every record is
   * its own inbox call already).
   */
  function chunkSize(tp: string, records: readonly KafkaRecord[], start: number): number {
    if (deps.mode !== 'batch' || !narrowed.has(tp)) return deps.batchSize;
    const ahead = records.slice(start, start + deps.batchSize).map((r) => BigInt(r.offset));
    const next = nextChunk(narrowed.get(tp), ahead, deps.batchSize);
    if (next.narrowing === undefined) narrowed.delete(tp);
    return next.size;
  }

  /** After `chunk` failed as a whole: take its stretch in chunks of half its size. */
  function narrow(ctx: KafkaBatchContext, tp: string, chunk: readonly KafkaRecord[]): void {
    const before = narrowed.get(tp);
    const next = narrowAfterFailure(
      before,
      chunk.map((r) => BigInt(r.offset)),
    );
    narrowed.set(tp, next);
    // Down to one record, the failure itself is what the retry logged.
    if (before?.size === next.size && before.until === next.until) return;
    deps.logger.warn('kafka inbox batch failed as a whole; retrying it in smaller chunks', {
      topic: ctx.batch.topic,
      partition: ctx.batch.partition,
      from: chunk[0]?.offset,
      until: next.until.toString(),
      chunkSize: next.size,
    });
  }

  /** Seeks back to `offset` and pauses the partition for `delayMs`; no sleeping in here. */
  function retryLater(ctx: KafkaBatchContext, tp: string, offset: string, delayMs: number): void {
    const { topic, partition } = ctx.batch;
    retryFrom.set(tp, BigInt(offset));
    deps.consumer.seek({ topic, partition, offset });
    const resume = ctx.pause();
    const timer = setTimeout(
      () => {
        timers.delete(timer);
        resume();
      },
      Math.max(0, delayMs),
    );
    timers.add(timer);
  }

  return {
    eachBatch,
    reset: () => {
      retryFrom.clear();
      narrowed.clear();
      firstDeliveries.reset();
    },
    dispose: () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      narrowed.clear();
      firstDeliveries.reset();
    },
  };
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
