import type { DeliveryOrdinal } from './attempts';
import { deadLetterMessage } from './dead-letter';
import { settleHandled } from './dedup';
import { ConcurrentDeliveryError } from './errors/concurrent-delivery-error';
import { MaxAttemptsExceededError } from './errors/max-attempts-exceeded-error';
import type { GoodDelivery } from './inspect-envelope';
import type { InboxRuntime } from './runtime';
import { poolRunner } from '../transactions/sql';
import {
  OVERLAP_MS,
  countAttempts,
  type AttemptToCount,
  type CountedAttempt,
} from './sql/count-attempts';
import { keyOf } from './sql/message-key';
import { readRecords } from './sql/read-records';
import { refundAttempts } from './sql/refund-attempts';
import { retryOutcome } from './retry-outcome';
import type { InboxOutcome } from './types';

/**
 * Whether this delivery needs the durable counting write. A delivery the transport marks as
 * first may skip it: if it crashes the process, the broker's count (or redelivered flag)
 * says so on the next delivery, and {@link attemptToCount} starts that count at 2. @internal
 */
export function needsCounting(rt: InboxRuntime, ordinal: DeliveryOrdinal): boolean {
  return rt.options.alwaysCountAttempts || !ordinal.first;
}

/**
 * Whether a delivery reads its dedup record before anything else: a redelivery the transport
 * reports (a receive count above 1, the redelivered flag). It is never a genuine first
 * delivery, so the read costs a first delivery nothing; it is a duplicate or a retry. A
 * delivery with no facts may be a first delivery: its count reads the record instead. @internal
 */
export function readsRecordFirst(ordinal: DeliveryOrdinal): boolean {
  return ordinal.reported && !ordinal.first;
}

/**
 * Counts one delivery that needs counting, in autocommit. A reported redelivery
 * ({@link readsRecordFirst}) first reads its record by primary key: a committed `SUCCEEDED`
 * record decides it with that one read, nothing counted (a retry pays the read on top of its
 * count). Otherwise the count, which reads the record too. @internal
 */
export async function countDelivery(
  rt: InboxRuntime,
  good: GoodDelivery,
  ordinal: DeliveryOrdinal,
): Promise<CountedAttempt | undefined> {
  const { store, consumer, maxAttempts } = rt.options;
  if (readsRecordFirst(ordinal)) {
    const records = await readRecords(poolRunner(store.knex), store.names, consumer, [good]);
    const record = records.get(keyOf(good));
    if (record?.status === 'SUCCEEDED') return { attempts: 0, overlapped: false, handled: record };
  }
  const counts = await countAttempts(store, consumer, maxAttempts, [
    attemptToCount(rt, good, ordinal),
  ]);
  return counts.get(keyOf(good));
}

/** The counter upsert for one delivery. @internal */
export function attemptToCount(
  rt: InboxRuntime,
  good: GoodDelivery,
  ordinal: DeliveryOrdinal,
): AttemptToCount {
  // When the transport reports first deliveries and this is not one, a first delivery
  // happened; if no counter exists, that delivery skipped counting and then crashed.
  const initial = !rt.options.alwaysCountAttempts && ordinal.reported ? 2 : 1;
  return { scope: good.scope, messageId: good.messageId, initial };
}

/** The attempt number: the durable count or the transport's, whichever is higher. @internal */
export function attemptNumber(
  stored: CountedAttempt | undefined,
  ordinal: DeliveryOrdinal,
): number {
  return Math.max(1, stored?.attempts ?? 1, ordinal.transportAttempt);
}

/**
 * The retry delay of a refused copy: {@link OVERLAP_MS} ± 25 %, uniformly random (750 to
 * 1250 ms), so copies refused together do not come back in lockstep. @internal
 */
export function concurrentRetryDelayMs(): number {
  return Math.round(OVERLAP_MS * (0.75 + 0.5 * Math.random()));
}

/**
 * Settles a delivery whose attempt number passed `maxAttempts` (a message with a committed
 * record never gets here: the count reads it, see {@link CountedAttempt.handled}). When the
 * store's count alone put it there, a moment after another attempt that went ahead and has
 * not finished (see {@link CountedAttempt.overlapped}), the count is made of copies delivered
 * together: this one gives its attempt back and is redelivered later, when the other has
 * committed (a duplicate then) or failed. Otherwise the message has used up its attempts.
 * @internal
 */
export async function settleExhausted(
  rt: InboxRuntime,
  good: GoodDelivery,
  attempt: number,
  stored: CountedAttempt | undefined,
  ordinal: DeliveryOrdinal,
): Promise<InboxOutcome<never>> {
  if (stored?.overlapped !== true || ordinal.transportAttempt > rt.options.maxAttempts) {
    return deadLetterExhausted(rt, good, attempt);
  }
  const { store, consumer } = rt.options;
  await refundAttempts(store.knex, store.names, consumer, [good]);
  const error = new ConcurrentDeliveryError({ messageId: good.messageId, attempt });
  return retryOutcome(good, attempt, error, concurrentRetryDelayMs());
}

/**
 * Judges a delivery by its count (`stored`, when it counted), before any transaction: its
 * attempt number, and its outcome when the count settles it (a committed record, read by the
 * count, decides before any count is judged; an attempt past `maxAttempts` is settled by
 * {@link settleExhausted}). Runs the `attempt-counted` step. @internal
 */
export async function settleByCount(
  rt: InboxRuntime,
  good: GoodDelivery,
  ordinal: DeliveryOrdinal,
  stored: CountedAttempt | undefined,
): Promise<{ readonly attempt: number; readonly settled?: InboxOutcome<never> }> {
  const attempt = attemptNumber(stored, ordinal);
  await rt.step('attempt-counted', good.messageId);
  if (stored?.handled !== undefined) {
    return { attempt, settled: await settleHandled(rt, good, attempt, stored.handled) };
  }
  if (attempt > rt.options.maxAttempts) {
    return { attempt, settled: await settleExhausted(rt, good, attempt, stored, ordinal) };
  }
  return { attempt };
}

/**
 * Dead-letters a message that has used up its attempts before its handler runs again (it
 * failed or crashed the process every time). @internal
 */
export function deadLetterExhausted(
  rt: InboxRuntime,
  good: GoodDelivery,
  attempt: number,
): Promise<InboxOutcome<never>> {
  const { maxAttempts } = rt.options;
  return deadLetterMessage(
    rt,
    good,
    'MAX_ATTEMPTS',
    attempt,
    (taken) =>
      new MaxAttemptsExceededError(
        attempt - 1,
        maxAttempts,
        undefined,
        taken?.lastError?.message ?? 'none recorded (the process may have died during the attempt)',
      ),
  );
}
