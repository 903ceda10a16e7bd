import type { InboxOutcome } from '@justonce/core';
import { decide, type Envelope } from '@justonce/core/transport';
import type { KafkaRecord } from './client';
import type { ProcessorRuntime } from './consumer-types';
import { mustStop, revoked, unlessHalted, type BatchRun } from './batch-run';
import { toEnvelope } from './envelope';
import {
  afterThrow,
  forwardDeadLetter,
  infraDelay,
  logOutcome,
  type PendingSettle,
} from './settle-records';

/** How a chunk ended. @internal */
export interface ChunkResult<R> {
  /** Offset of the last record whose outcome is final (processed, duplicate, dead letter sent). */
  readonly done?: string;
  /** Set when a record must be delivered again: stop, seek back to it, pause the partition. */
  readonly retry?: { readonly offset: string; readonly delayMs: number };
  /** True when the batch must not go on (stopping, stale, revoked). */
  readonly stopped?: boolean;
  /** True when the inbox call failed for the chunk as a whole: nothing in it was settled. */
  readonly wholeChunkFailed?: boolean;
  /** What became of each record handed to the inbox, reported once the offset commit answered. */
  readonly settled: ReadonlyArray<PendingSettle<R>>;
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
  const { inbox, handler } = runtime.deps;
  const settled: Array<PendingSettle<R>> = [];
  let done: string | undefined;
  for (const record of chunk) {
    if (mustStop(runtime, run)) return { done, stopped: true, settled };
    const envelope = envelopesOf(runtime, run, [record])[0]!;
    let outcome: InboxOutcome<R>;
    try {
      const ended = await unlessHalted(
        runtime,
        inbox.process(envelope, handler, { signal: run.abort.signal }),
      );
      if ('halted' in ended) {
        settled.push(...releasedOnHalt<R>([record], [envelope], ended.halted));
        return { done, stopped: true, settled };
      }
      outcome = ended.value;
    } catch (error) {
      const { action, delayMs, error: cause } = afterThrow(runtime, run, error, [record]);
      settled.push({ record, messageId: envelope.id, action, delayMs, error: cause });
      return { done, retry: { offset: record.offset, delayMs }, settled };
    }
    logOutcome(runtime, run, record, outcome);
    const decision = decide(outcome, { consumer: inbox.consumer, source: run.topic });
    const base = { record, messageId: outcome.messageId, outcome };
    if (decision.kind === 'redeliver') {
      settled.push({ ...base, action: 'redelivered', delayMs: decision.delayMs });
      return { done, retry: { offset: record.offset, delayMs: decision.delayMs }, settled };
    }
    if (decision.kind === 'dead-letter') {
      const refused = await forwardDeadLetter(runtime, run, record, decision.facts);
      if (refused) {
        const delayMs = infraDelay(runtime, run.tp);
        settled.push({ ...base, action: 'released', delayMs, error: refused });
        return { done, retry: { offset: record.offset, delayMs }, settled };
      }
      settled.push({ ...base, action: 'dead-lettered', deadLetter: decision.facts });
    } else {
      settled.push({ ...base, action: 'ack' });
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
  const { inbox, handler } = runtime.deps;
  const envelopes = envelopesOf(runtime, run, chunk);
  let outcomes: Array<InboxOutcome<R>>;
  try {
    const ended = await unlessHalted(
      runtime,
      inbox.processBatch(envelopes, handler, { signal: run.abort.signal }),
    );
    if ('halted' in ended) {
      return { stopped: true, settled: releasedOnHalt<R>(chunk, envelopes, ended.halted) };
    }
    outcomes = ended.value;
  } catch (error) {
    const { action, delayMs, error: cause } = afterThrow(runtime, run, error, chunk);
    return {
      retry: { offset: chunk[0]!.offset, delayMs },
      // An outage of the store says nothing about the records: no narrowing for it.
      wholeChunkFailed: action === 'released',
      settled: chunk.map((record, i) => ({
        record,
        messageId: envelopes[i]?.id,
        action,
        delayMs,
        error: cause,
      })),
    };
  }
  return settleChunk(runtime, run, chunk, outcomes);
}

/**
 * The batch-mode chunk's outcomes, in order, through core's `decide`. The chunk is finished
 * up to the first record to be delivered again (a failure, or a dead letter the dead-letter
 * topic refused); records after it that committed are released with it (delivered again,
 * answered `duplicate`).
 */
async function settleChunk<R>(
  runtime: ProcessorRuntime<R>,
  run: BatchRun,
  chunk: readonly KafkaRecord[],
  outcomes: ReadonlyArray<InboxOutcome<R>>,
): Promise<ChunkResult<R>> {
  const settled: Array<PendingSettle<R>> = [];
  let failedAt: number | undefined;
  let delayMs = 0;
  let deadLetterTopicDown: Error | undefined;
  for (let i = 0; i < chunk.length; i++) {
    const outcome = outcomes[i]!;
    const record = chunk[i]!;
    logOutcome(runtime, run, record, outcome);
    const decision = decide(outcome, { consumer: runtime.deps.inbox.consumer, source: run.topic });
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
