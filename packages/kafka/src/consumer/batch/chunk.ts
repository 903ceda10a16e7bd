import type { Envelope } from '@justonce/core/transport';
import type { KafkaRecord } from '../../client/types';
import type { ProcessorRuntime } from '../types';
import { mustStop, revoked, type BatchRun } from './run';
import { toEnvelope } from '../envelope';
import { decideRecord, handleOne, handleTogether } from '../handle';
import { settleChunk, settleOne, type PendingSettle, type SettledRecords } from '../settle';

/** How a chunk ended. @internal */
export interface ChunkResult<R> extends SettledRecords<R> {
  /** True when the batch must not go on (stopping, stale, revoked). */
  readonly stopped?: boolean;
  /** True when the inbox call failed for the chunk as a whole: nothing in it was settled. */
  readonly wholeChunkFailed?: boolean;
}

/** The envelopes of records about to be handed to the inbox, in that order. */
function envelopesOf<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  chunk: readonly KafkaRecord[],
): Envelope[] {
  const firsts = revoked(runtime, run)
    ? chunk.map(() => false)
    : runtime.firstDeliveries.hand(
        run.tp,
        chunk.map((r) => r.offset),
      );
  return chunk.map((record, i) =>
    toEnvelope(record, run.topic, run.partition, runtime.deps.envelope, firsts[i]),
  );
}

/** The records of a chunk the halt gave up on: released, delivered again to the next owner. */
function releasedOnHalt<R>(
  records: readonly KafkaRecord[],
  envelopes: readonly Envelope[],
  error: Error,
): Array<PendingSettle<R>> {
  return records.map((record, i) => ({
    record,
    messageId: envelopes[i]?.id,
    action: 'released',
    error,
  }));
}

/** The `message`-mode chunk: each record its own inbox transaction, stopping at a failure. @internal */
export async function processOneByOne<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  chunk: readonly KafkaRecord[],
): Promise<ChunkResult<R>> {
  const settled: Array<PendingSettle<R>> = [];
  let done: string | undefined;
  for (const record of chunk) {
    if (mustStop(runtime, run)) return { done, stopped: true, settled };
    const envelope = envelopesOf(runtime, run, [record])[0]!;
    const handled = await handleOne(runtime, run, record, envelope);
    if ('halted' in handled) {
      settled.push(...releasedOnHalt<R>([record], [envelope], handled.halted));
      return { done, stopped: true, settled };
    }
    if ('thrown' in handled) {
      const { action, delayMs, error } = handled.thrown;
      settled.push({ record, messageId: envelope.id, action, delayMs, error });
      return { done, retry: { offset: record.offset, delayMs }, settled };
    }
    const outcome = handled.outcome;
    const decision = decideRecord(runtime, run, record, outcome);
    const { pending, retryDelayMs } = await settleOne(runtime, run, record, outcome, decision);
    settled.push(pending);
    if (retryDelayMs !== undefined) {
      return { done, retry: { offset: record.offset, delayMs: retryDelayMs }, settled };
    }
    runtime.holds.delete(run.tp);
    done = record.offset;
  }
  return { done, settled };
}

/** The `batch`-mode chunk: one inbox transaction for all its records. @internal */
export async function processTogether<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  chunk: readonly KafkaRecord[],
): Promise<ChunkResult<R>> {
  const envelopes = envelopesOf(runtime, run, chunk);
  const handled = await handleTogether(runtime, run, chunk, envelopes);
  if ('halted' in handled) {
    return { stopped: true, settled: releasedOnHalt<R>(chunk, envelopes, handled.halted) };
  }
  if ('thrown' in handled) {
    const { action, delayMs, error } = handled.thrown;
    return {
      retry: { offset: chunk[0]!.offset, delayMs },
      // An outage of the store says nothing about the records: no narrowing for it.
      wholeChunkFailed: action === 'released',
      settled: chunk.map((record, i) => ({
        record,
        messageId: envelopes[i]?.id,
        action,
        delayMs,
        error,
      })),
    };
  }
  const outcomes = handled.outcome;
  const decisions = chunk.map((record, i) => decideRecord(runtime, run, record, outcomes[i]!));
  return settleChunk(runtime, run, chunk, outcomes, decisions);
}
