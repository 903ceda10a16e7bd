// The inbox hand-off: envelopes → the inbox → core's `decide` (an outcome) or `decideOnThrow`
// (a throw). What the broker is then asked to do is `settle.ts`'s part.

import type { InboxOutcome } from '@justonce/core';
import {
  decide,
  decideOnThrow,
  errorMessage,
  type Decision,
  type Envelope,
} from '@justonce/core/transport';
import { isCircuitOpenError } from '@justonce/core/retry';
import type { KafkaRecord } from '../client/types';
import type { ProcessorRuntime } from './types';
import { unlessHalted, type BatchRun } from './batch/run';
import { HOLD_BACKOFF, MIN_HOLD_DELAY_MS, infraDelay } from './batch/partition-pacing';

/** What the inbox call threw, decided: the records are held or released, then retried. @internal */
export interface Thrown {
  readonly action: 'held' | 'released';
  readonly delayMs: number;
  readonly error: Error;
}

/** How one inbox call ended: halted by a stop, thrown (decided), or its outcome(s). @internal */
export type Handled<T> =
  { readonly halted: Error } | { readonly thrown: Thrown } | { readonly outcome: T };

/** The `message`-mode call: one envelope, its own inbox transaction. @internal */
export async function handleOne<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  record: KafkaRecord,
  envelope: Envelope,
): Promise<Handled<InboxOutcome<R>>> {
  const { inbox, handler } = runtime.deps;
  try {
    const ended = await unlessHalted(
      runtime,
      inbox.process(envelope, handler, {
        signal: run.abort.signal,
        messaging: runtime.deps.messaging,
      }),
    );
    return 'halted' in ended ? { halted: ended.halted } : { outcome: ended.value };
  } catch (error) {
    return { thrown: afterThrow(runtime, run, error, [record]) };
  }
}

/** The `batch`-mode call: every envelope of the chunk in one inbox transaction. @internal */
export async function handleTogether<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  chunk: readonly KafkaRecord[],
  envelopes: Envelope[],
): Promise<Handled<Array<InboxOutcome<R>>>> {
  const { inbox, handler } = runtime.deps;
  try {
    const ended = await unlessHalted(
      runtime,
      inbox.processBatch(envelopes, handler, {
        signal: run.abort.signal,
        messaging: runtime.deps.messaging,
      }),
    );
    return 'halted' in ended ? { halted: ended.halted } : { outcome: ended.value };
  } catch (error) {
    return { thrown: afterThrow(runtime, run, error, chunk) };
  }
}

/** A record's outcome, logged when it needs a look, through core's `decide`. @internal */
export function decideRecord<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  record: KafkaRecord,
  outcome: InboxOutcome<R>,
): Decision<R> {
  logOutcome(runtime, run, record, outcome);
  return decide(outcome, { consumer: runtime.deps.inbox.consumer, source: run.topic });
}

/** Logs the outcomes that need a look: a failure to be retried, a dead letter. */
function logOutcome<R>(
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
 * What to do when the inbox call threw (core's {@link decideOnThrow}): `held` for a store
 * outage, `released` for anything else; either way the partition is paused and the records
 * come back after a growing, jittered delay. The failure is logged.
 */
function afterThrow<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  error: unknown,
  chunk: readonly KafkaRecord[],
): Thrown {
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
  // An open breaker is warned once per open by the resilience layer; each hold is debug.
  const log = isCircuitOpenError(error) ? runtime.deps.logger.debug : runtime.deps.logger.error;
  log.call(runtime.deps.logger, message, {
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
