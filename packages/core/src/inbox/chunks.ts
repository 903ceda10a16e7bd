import type { Envelope } from '../transport/envelope';
import type { InboxOutcome } from './types';

/** Deliveries per transaction; a larger batch runs as several transactions in sequence. */
export const MAX_BATCH_SIZE = 1000;

/**
 * Runs a batch as chunks of at most {@link MAX_BATCH_SIZE} deliveries, one after another;
 * the outcomes in input order. @internal
 */
export async function inChunks<R>(
  envelopes: readonly Envelope[],
  run: (chunk: readonly Envelope[]) => Promise<InboxOutcome<R>[]>,
): Promise<InboxOutcome<R>[]> {
  const outcomes: InboxOutcome<R>[] = [];
  for (let start = 0; start < envelopes.length; start += MAX_BATCH_SIZE) {
    outcomes.push(...(await run(envelopes.slice(start, start + MAX_BATCH_SIZE))));
  }
  return outcomes;
}

/** A chunk's outcomes, once every delivery of it has one. @internal */
export function everyOutcome<R>(
  outcomes: ReadonlyArray<InboxOutcome<R> | undefined>,
): InboxOutcome<R>[] {
  return outcomes.map((o) => {
    if (o === undefined) throw new Error('batch left a delivery without an outcome');
    return o;
  });
}
