import { poolRunner } from '../../transactions/sql';
import { attemptNumber, attemptToCount, needsCounting, settleExhausted } from '../count';
import { settleHandled } from '../dedup';
import { report } from '../process-one';
import type { InboxRuntime } from '../runtime';
import { countAttempts, type CountedAttempt } from '../sql/count-attempts';
import { keyOf } from '../sql/message-key';
import { readChunk } from '../sql/read-records';
import type { InboxOutcome } from '../types';
import type { LiveRecord } from './process';

/** A delivery of a chunk ready for the chunk's transaction, with its attempt. @internal */
export interface Runnable extends LiveRecord {
  readonly attempt: number;
  /** Its attempt was counted durably: its counter is cleared with its transaction. */
  readonly counted: boolean;
}

/**
 * Counts the attempts of a chunk's deliveries that need it (those the transport does not mark
 * first: redeliveries, the first chunks after an assignment), as the `ids` mode does: one
 * read first (a message committed as handled under an id record is a duplicate; an attempt
 * counted earlier and never finished means the process may have died in this chunk, and the
 * chunk then runs one delivery per transaction: `'alone'`), then one counting statement.
 * Settles the handled and the exhausted into `outcomes` and returns the rest. @internal
 */
export async function countChunk(
  rt: InboxRuntime,
  live: readonly LiveRecord[],
  outcomes: Array<InboxOutcome<unknown> | undefined>,
): Promise<Runnable[] | 'alone'> {
  const { store, consumer, maxAttempts } = rt.options;
  const toCount = live.filter((item) => needsCounting(rt, item.prepared.ordinal));
  if (toCount.length === 0) {
    const runnable: Runnable[] = [];
    for (const item of live) {
      await rt.step('attempt-counted', item.prepared.good.messageId);
      const attempt = attemptNumber(undefined, item.prepared.ordinal);
      runnable.push({ ...item, attempt, counted: false });
    }
    return runnable;
  }
  const goods = live.map((item) => item.prepared.good);
  const counting = toCount.map((item) => item.prepared.good);
  const chunk = await readChunk(poolRunner(store.knex), store, consumer, goods, counting);
  if (chunk.unfinished) return 'alone';
  const counts = await countAttempts(
    store,
    consumer,
    maxAttempts,
    // In key order: two overlapping chunks never lock counters in opposite orders.
    toCount
      .filter((item) => !chunk.handled.has(keyOf(item.prepared.good)))
      .map((item) => attemptToCount(rt, item.prepared.good, item.prepared.ordinal))
      .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0)),
    // Charged to the chunk: should the process die in it, each message's next count alone
    // makes the charge its own.
    toCount.length > 1,
  );
  const counted = new Set(toCount.map((item) => item.index));
  const runnable: Runnable[] = [];
  for (const item of live) {
    const { good, ordinal } = item.prepared;
    const stored: CountedAttempt | undefined = counts.get(keyOf(good));
    const attempt = attemptNumber(stored, ordinal);
    await rt.step('attempt-counted', good.messageId);
    const handled = chunk.handled.get(keyOf(good)) ?? stored?.handled;
    if (handled !== undefined) {
      outcomes[item.index] = await report(
        rt,
        await settleHandled(rt, good, attempt, handled),
        good.envelope.body,
      );
    } else if (attempt > maxAttempts) {
      outcomes[item.index] = await report(
        rt,
        await settleExhausted(rt, good, attempt, stored, ordinal),
        good.envelope.body,
      );
    } else {
      runnable.push({ ...item, attempt, counted: counted.has(item.index) });
    }
  }
  return runnable;
}
