import { effectContext } from './effect-context';
import { finalize, serializeResponse } from './finalize';
import { watchLease } from './lease-watch';
import { recordEffectFailure, recordFailure } from './record-failure';
import type { OperationsRuntime } from './runtime';
import type { OperationEffect, Reservation } from './types';

/** A reservation this caller holds. @internal */
export type Acquired = Extract<Reservation, { kind: 'acquired' }>;

/**
 * Runs the effect of a reservation this caller acquired and finalizes the record: its
 * response on success, its failure (retriable or final, as `isRetriable` says) when it
 * throws. The effect's own error is what the caller gets, even when recording it
 * failed. @internal
 */
export async function execute<R>(
  rt: OperationsRuntime,
  reservation: Acquired,
  effect: OperationEffect<R>,
  callerSignal: AbortSignal | undefined,
): Promise<R> {
  const { ref } = reservation;
  const watch = watchLease(ref, callerSignal, reservation.leaseRemainingMs);
  const context = effectContext(rt, ref, watch);
  const started = performance.now();
  let response: R;
  try {
    response = await effect(context);
  } catch (error) {
    rt.effectDuration(ref.operation, performance.now() - started);
    watch.stop();
    rt.count(ref.operation, 'effect_failed');
    await recordEffectFailure(rt, ref, error);
    throw error;
  }
  rt.effectDuration(ref.operation, performance.now() - started);
  watch.stop();

  let json: string;
  try {
    json = serializeResponse(rt, ref, response);
  } catch (error) {
    // The effect ran but its result cannot be stored: record a final failure so that no
    // duplicate runs the effect a second time, and tell this caller why.
    await recordFailure(rt, ref, error, false, 'an unstorable response');
    throw error;
  }
  await finalize(rt, ref, { status: 'SUCCEEDED', responseJson: json }, 'complete');
  rt.count(ref.operation, 'executed');
  return JSON.parse(json) as R;
}
