// A Decision → what Kafka is asked: nothing yet for an ack (the chunk's offset commit acks
// it), a seek back for a redelivery, a forward for a dead letter; then `onSettled`.

import type { InboxOutcome } from '@justonce/core';
import {
  type DeadLetterFacts,
  type Decision,
  type SettleAction,
  type SettledEvent,
  errorMessage,
} from '@justonce/core/transport';
import type { KafkaRecord } from '../client/types';
import type { KafkaDelivery, ProcessorRuntime } from './types';
import type { AckResult, BatchRun } from './batch/run';
import { infraDelay } from './batch/partition-pacing';

/**
 * What the consumer did, or will do once the chunk's offset commit is answered (`ack`),
 * with one record: reported to `onSettled` after the commit. @internal
 */
export interface PendingSettle<R> {
  readonly record: KafkaRecord;
  readonly messageId: string | undefined;
  /** `ack`: `acked` if the chunk's offset commit succeeds (see {@link AckResult}). */
  readonly action: SettleAction | 'ack';
  readonly outcome?: InboxOutcome<R>;
  readonly delayMs?: number;
  readonly error?: Error;
  readonly deadLetter?: DeadLetterFacts;
}

/** Records settled in offset order: how far the partition is done, and where it resumes. @internal */
export interface SettledRecords<R> {
  /** Offset of the last record whose outcome is final (processed, duplicate, dead letter sent). */
  readonly done?: string;
  /** Set when a record must be delivered again: stop, seek back to it, pause the partition. */
  readonly retry?: { readonly offset: string; readonly delayMs: number };
  /** What became of each record handed to the inbox, reported once the offset commit answered. */
  readonly settled: ReadonlyArray<PendingSettle<R>>;
}

/**
 * One record's decision (`message` mode). `retryDelayMs` is set when the record must be
 * delivered again: redelivered, or a dead letter the dead-letter topic refused. @internal
 */
export async function settleOne<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  record: KafkaRecord,
  outcome: InboxOutcome<R>,
  decision: Decision<R>,
): Promise<{ readonly pending: PendingSettle<R>; readonly retryDelayMs?: number }> {
  const base = { record, messageId: outcome.messageId, outcome };
  if (decision.kind === 'redeliver') {
    return {
      pending: { ...base, action: 'redelivered', delayMs: decision.delayMs },
      retryDelayMs: decision.delayMs,
    };
  }
  if (decision.kind === 'dead-letter') {
    const refused = await forwardDeadLetter(runtime, run, record, decision.facts);
    if (refused) {
      const delayMs = infraDelay(runtime, run.tp);
      return {
        pending: { ...base, action: 'released', delayMs, error: refused },
        retryDelayMs: delayMs,
      };
    }
    return { pending: { ...base, action: 'dead-lettered', deadLetter: decision.facts } };
  }
  return { pending: { ...base, action: 'ack' } };
}

/**
 * The batch-mode chunk's decisions, in order. The chunk is finished up to the first record
 * to be delivered again (a failure, or a dead letter the dead-letter topic refused); records
 * after it that committed are released with it (delivered again, answered `duplicate`).
 * @internal
 */
export async function settleChunk<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  chunk: readonly KafkaRecord[],
  outcomes: ReadonlyArray<InboxOutcome<R>>,
  decisions: ReadonlyArray<Decision<R>>,
): Promise<SettledRecords<R>> {
  const settled: Array<PendingSettle<R>> = [];
  let failedAt: number | undefined;
  let delayMs = 0;
  let deadLetterTopicDown: Error | undefined;
  for (let i = 0; i < chunk.length; i++) {
    const outcome = outcomes[i]!;
    const record = chunk[i]!;
    const decision = decisions[i]!;
    const base = { record, messageId: outcome.messageId, outcome };
    if (decision.kind === 'redeliver') {
      if (failedAt === undefined) {
        failedAt = i;
        delayMs = decision.delayMs;
      }
      settled.push({ ...base, action: 'redelivered', delayMs: decision.delayMs });
    } else if (decision.kind === 'dead-letter') {
      // Dead letters are final in the store: forward each even past a failed record,
      // so none depends on how a redelivery of it would be answered.
      deadLetterTopicDown ??= await forwardDeadLetter(runtime, run, record, decision.facts);
      if (deadLetterTopicDown === undefined) {
        settled.push({ ...base, action: 'dead-lettered', deadLetter: decision.facts });
        continue;
      }
      if (failedAt === undefined || i < failedAt) {
        failedAt = i;
        delayMs = infraDelay(runtime, run.tp);
      }
      settled.push({ ...base, action: 'released', error: deadLetterTopicDown });
    } else {
      settled.push({ ...base, action: 'ack' });
    }
  }
  if (failedAt === undefined) {
    runtime.holds.delete(run.tp);
    return { done: chunk[chunk.length - 1]!.offset, settled };
  }
  return {
    done: failedAt > 0 ? chunk[failedAt - 1]!.offset : undefined,
    retry: { offset: chunk[failedAt]!.offset, delayMs },
    settled: releaseAfter(settled, failedAt, chunk[failedAt]!.offset),
  };
}

/** Records after the one delivered again, handled but not acknowledged: released with it. */
function releaseAfter<R>(
  settled: ReadonlyArray<PendingSettle<R>>,
  failedAt: number,
  offset: string,
): Array<PendingSettle<R>> {
  const error = new Error(`delivered again with the record at offset ${offset}`);
  return settled.map((s, i) =>
    i > failedAt && s.action === 'ack' ? { ...s, action: 'released', error } : s,
  );
}

/** The record with where it sits: the `message` of its settled event. @internal */
export function deliveryOf(run: BatchRun, record: KafkaRecord): KafkaDelivery {
  return { topic: run.topic, partition: run.partition, record };
}

/**
 * Reports each record's settlement to `onSettled`, in offset order, once the chunk's
 * offset commit was answered: a record awaiting it is `acked`, or released or abandoned
 * with the commit. A throwing listener is logged and changes nothing. @internal
 */
export function emitSettled<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  pending: ReadonlyArray<PendingSettle<R>>,
  ack: AckResult,
): void {
  const { onSettled, logger } = runtime.deps;
  if (!onSettled) return;
  const halted = runtime.halted;
  // The consumer is stopping: a record to be tried again is not retried in process any more
  // but given back to the broker with the partition.
  const stopping = halted ?? (run.ctx.isRunning() ? undefined : new Error('the consumer stopped'));
  for (const { record, action, ...facts } of pending) {
    const settled =
      // Halted (a stop without drain): nothing committed, so only a forwarded dead letter
      // is settled; every other record goes back to the broker.
      halted !== undefined && action !== 'dead-lettered'
        ? { action: 'released' as const, error: halted }
        : stopping !== undefined && (action === 'redelivered' || action === 'held')
          ? { action: 'released' as const, error: facts.error ?? stopping }
          : action === 'ack'
            ? ack
            : { action, error: facts.error };
    const event: SettledEvent<R, KafkaDelivery> = {
      ...facts,
      ...settled,
      message: deliveryOf(run, record),
    };
    try {
      onSettled(event);
    } catch (error) {
      logger.warn('onSettled listener threw', { error: errorMessage(error) });
    }
  }
}

/**
 * Sends a dead letter on. Returns the error when the dead-letter topic did not take it: the
 * record is then released (its offset not committed) and delivered again. @internal
 */
export async function forwardDeadLetter<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  record: KafkaRecord,
  facts: DeadLetterFacts,
): Promise<Error | undefined> {
  try {
    await runtime.deps.forwardDeadLetter(deliveryOf(run, record), facts);
    return undefined;
  } catch (error) {
    runtime.deps.logger.error('kafka dead-letter forward failed; the record will be retried', {
      topic: run.topic,
      partition: run.partition,
      offset: record.offset,
      error: errorMessage(error),
    });
    return error instanceof Error ? error : new Error(String(error));
  }
}
