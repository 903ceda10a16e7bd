import { EarlierRecordFailedError } from '../errors/earlier-record-failed-error';
import type { GoodDelivery } from '../inspect-envelope';
import { partitionKey } from '../sql/offsets';
import { retryOutcome } from '../retry-outcome';
import type { InboxOutcome } from '../types';
import type { Placed } from './position';

/**
 * Per partition, the offset of the chunk's first record that must be delivered again. The
 * records after it in the chunk are held: handled now, they would raise the watermark past
 * it, and its redelivery would be taken for a duplicate. @internal
 */
export type FailedAt = Map<string, bigint>;

/** Notes a record's outcome: a `failed` one holds the partition's later records. @internal */
export function noteOutcome(
  failedAt: FailedAt,
  at: Placed,
  outcome: InboxOutcome<unknown> | undefined,
): void {
  if (outcome?.status !== 'failed') return;
  const key = partitionKey(at);
  const failed = failedAt.get(key);
  if (failed === undefined || at.offset < failed) failedAt.set(key, at.offset);
}

/** The failed offset that holds this record back, if one does. @internal */
export function heldBy(failedAt: FailedAt, at: Placed): bigint | undefined {
  const failed = failedAt.get(partitionKey(at));
  return failed !== undefined && at.offset > failed ? failed : undefined;
}

/** The outcome of a held record: redeliver it after the failed one, at once. @internal */
export function heldOutcome(
  good: GoodDelivery,
  at: Placed,
  attempt: number,
  failedOffset: bigint,
): InboxOutcome<never> {
  const error = new EarlierRecordFailedError({
    messageId: good.messageId,
    topic: at.topic,
    partition: at.partition,
    failedOffset: failedOffset.toString(),
  });
  return retryOutcome(good, attempt, error, 0);
}
