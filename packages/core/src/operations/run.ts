import { InvalidOperationInputError } from './errors/invalid-operation-input-error';
import { OperationFailedError } from './errors/operation-failed-error';
import { OperationInProgressError } from './errors/operation-in-progress-error';
import { execute } from './execute';
import { callOptions } from './input';
import { requestHash } from './request-hash';
import { reserveRecord } from './reserve';
import type { OperationsRuntime } from './runtime';
import { target } from './target';
import type { OperationEffect, RunOptions } from './types';
import { durationInput } from './validate';
import { waitForOwner } from './wait';

/**
 * `Operations.run`: reserve the key, then run the effect if this call acquired it, replay
 * the stored response or failure if it is settled, or wait for the owner (up to
 * `waitForInProgressMs`) and look again. @internal
 */
export async function run<R>(
  rt: OperationsRuntime,
  key: string,
  request: unknown,
  effect: OperationEffect<R>,
  given?: RunOptions,
): Promise<R> {
  if (typeof effect !== 'function') {
    throw new InvalidOperationInputError('run needs an effect function');
  }
  const runOptions = callOptions<RunOptions>(given, 'run');
  const record = target(rt, key, runOptions);
  const hash = requestHash(request);
  const retentionMs = durationInput(
    runOptions.retentionMs,
    'retentionMs',
    rt.options.defaultRetentionMs,
    1,
  );
  const waitMs = durationInput(
    runOptions.waitForInProgressMs,
    'waitForInProgressMs',
    rt.options.defaultWaitMs,
    0,
  );
  const signal = runOptions.signal;
  const started = Date.now();
  const deadline = started + waitMs;
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    const reservation = await reserveRecord(rt, record, hash, retentionMs);
    switch (reservation.kind) {
      case 'acquired':
        return execute(rt, reservation, effect, signal);
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
