import type { InboxOutcome } from '@justonce/core';
import {
  decideOnThrow,
  type DeadLetterFacts,
  type SettleAction,
  type SettledEvent,
  errorMessage,
} from '@justonce/core/transport';
import { fullJitterBackoff } from '@justonce/core/retry';
import type { KafkaRecord } from './client';
import type { KafkaDelivery, ProcessorRuntime } from './consumer-types';
import type { AckResult, BatchRun } from './batch-run';

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

// Capped low: once the store answers again, a paused partition should find out within a
// few seconds, not after a 30 s backoff step drawn during the outage.
const HOLD_BACKOFF = { baseMs: 250, capMs: 3_000 };
const MIN_HOLD_DELAY_MS = 100;

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

/** Logs the outcomes that need a look: a failure to be retried, a dead letter. @internal */
export function logOutcome<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  record: KafkaRecord,
  outcome: InboxOutcome<R>,
): void {
  const position = { topic: run.topic, partition: run.partition, offset: record.offset };
  if (outcome.status === 'failed') {
    runtime.deps.logger.warn('kafka record failed; it will be retried', {
      ...position,
      messageId: outcome.messageId,
      attempt: outcome.attempt,
      retryDelayMs: outcome.retryDelayMs,
      error: outcome.error.message,
    });
  } else if (outcome.status === 'dead-lettered') {
    runtime.deps.logger.error('kafka record dead-lettered', {
      ...position,
      messageId: outcome.messageId,
      reason: outcome.reason,
      error: outcome.error.message,
    });
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

/**
 * What to do when the inbox call threw (core's {@link decideOnThrow}): `held` for a store
 * outage, `released` for anything else; either way the partition is paused and the records
 * come back after a growing, jittered delay. The failure is logged. @internal
 */
export function afterThrow<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  error: unknown,
  chunk: readonly KafkaRecord[],
): { readonly action: 'held' | 'released'; readonly delayMs: number; readonly error: Error } {
  const holds = runtime.holds.get(run.tp) ?? 0;
  const decision = decideOnThrow(error, {
    consumer: runtime.deps.inbox.consumer,
    source: run.topic,
    holds,
    holdBackoff: HOLD_BACKOFF,
  });
  // The two messages of old, kept: dashboards and docs/failure-modes.md quote them.
  const message =
    runtime.deps.mode === 'batch'
      ? 'kafka inbox batch failed; the records will be retried'
      : 'kafka inbox call failed; the record will be retried';
  runtime.deps.logger.error(message, {
    topic: run.topic,
    partition: run.partition,
    offset: chunk[0]?.offset,
    error: errorMessage(error),
  });
  if (decision.kind === 'hold') {
    runtime.holds.set(run.tp, holds + 1);
    return {
      action: 'held',
      delayMs: Math.max(MIN_HOLD_DELAY_MS, decision.delayMs),
      error: decision.error,
    };
  }
  const released = decision.kind === 'release' ? decision.error : new Error(errorMessage(error));
  return { action: 'released', delayMs: infraDelay(runtime, run.tp), error: released };
}

/** The next delay after an infrastructure failure on the partition (growing, jittered). @internal */
export function infraDelay<R>(runtime: ProcessorRuntime<R>, tp: string): number {
  const n = (runtime.holds.get(tp) ?? 0) + 1;
  runtime.holds.set(tp, n);
  return Math.max(MIN_HOLD_DELAY_MS, fullJitterBackoff(n, HOLD_BACKOFF));
}
