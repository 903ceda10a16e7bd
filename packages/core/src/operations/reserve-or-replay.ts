import { OperationFailedError } from './errors/operation-failed-error';
import { OperationInProgressError } from './errors/operation-in-progress-error';
import type { Acquired } from './execute';
import type { PreparedCall } from './prepare-call';
import { reserveRecord } from './reserve';
import type { OperationsRuntime } from './runtime';
import type { RunOptions } from './types';
import { waitForOwner } from './wait';

/**
 * The loop `run` and `runInTransaction` share: reserve the key, then hand the reservation
 * to `execute` if this call acquired it, replay the stored response or failure if it is
 * settled, or wait for the owner (up to `waitForInProgressMs`) and look again. @internal
 */
export async function reserveOrReplay<R>(
  rt: OperationsRuntime,
  call: PreparedCall<RunOptions>,
  execute: (reservation: Acquired) => Promise<R>,
): Promise<R> {
  const { record, hash, retentionMs, signal } = call;
  const started = Date.now();
  const deadline = started + call.waitMs;
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    const reservation = await reserveRecord(rt, record, hash, retentionMs);
    switch (reservation.kind) {
      case 'acquired':
        return execute(reservation);
      case 'completed':
        rt.count(record.operation, 'replayed');
        return reservation.response as R;
      case 'failed':
        rt.count(record.operation, 'failure_replayed');
        throw new OperationFailedError(
          record.scope,
          record.operation,
          record.key,
          reservation.failure,
        );
      case 'in-progress':
        if (Date.now() >= deadline) {
          rt.count(record.operation, 'in_progress');
          throw new OperationInProgressError(
            record.scope,
            record.operation,
            record.key,
            reservation.leaseUntil,
            Date.now() - started,
          );
        }
        await waitForOwner(rt, record, deadline, signal);
        break;
    }
  }
}
