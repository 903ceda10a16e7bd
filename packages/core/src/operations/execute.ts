import { isLeaseLostError } from './errors/lease-lost-error';
import { describeError } from './describe-error';
import { extendLease, fail, finalize, serializeResponse } from './finalize';
import { watchLease, type LeaseWatch } from './lease-watch';
import type { OperationsRuntime } from './runtime';
import { recordKeyOf } from './target';
import type { OperationContext, OperationEffect, OperationRef, Reservation } from './types';

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
    await fail(rt, ref, error, { retriable: false }).catch((recordError: unknown) => {
      rt.options.logger.warn('could not record an unstorable response', {
        ...recordKeyOf(ref),
        error: describeError(recordError),
      });
    });
    throw error;
  }
  await finalize(rt, ref, { status: 'SUCCEEDED', responseJson: json }, 'complete');
  rt.count(ref.operation, 'executed');
  return JSON.parse(json) as R;
}

/** What the effect sees: the record it works on, its signal, and a way to extend the lease. */
function effectContext(
  rt: OperationsRuntime,
  ref: OperationRef,
  watch: LeaseWatch,
): OperationContext {
  const { controller } = watch;
  return {
    key: ref.key,
    scope: ref.scope,
    operation: ref.operation,
    ownerId: ref.ownerId,
    attempt: ref.attempt,
    signal: controller.signal,
    extendLease: async (ms?: number) => {
      let extended: { leaseUntil: Date; dbNow: Date };
      try {
        extended = await extendLease(rt, ref, ms);
      } catch (error) {
        if (isLeaseLostError(error)) controller.abort(error);
        throw error;
      }
      if (!controller.signal.aborted) {
        watch.rearm(extended.leaseUntil.getTime() - extended.dbNow.getTime());
      }
      return extended.leaseUntil;
    },
  };
}

/** Records a failed effect, logging (not throwing) when the record cannot be written. */
async function recordEffectFailure(
  rt: OperationsRuntime,
  ref: OperationRef,
  error: unknown,
): Promise<void> {
  const retriable = safeIsRetriable(rt, error);
  try {
    await fail(rt, ref, error, { retriable });
  } catch (recordError) {
    // The effect's own error is what the caller must see; the record stays as it is
    // (another owner's, or IN_PROGRESS until its lease runs out).
    rt.options.logger.warn('could not record the failure of an operation', {
      ...recordKeyOf(ref),
      ownerId: ref.ownerId,
      error: describeError(recordError),
    });
  }
}

/** `isRetriable`, with a throwing classifier taken as "retriable" so the key is not stuck. */
function safeIsRetriable(rt: OperationsRuntime, error: unknown): boolean {
  try {
    return rt.options.isRetriable(error) === true;
  } catch (classifyError) {
    rt.options.logger.warn('isRetriable threw; treating the failure as retriable', {
      error: describeError(classifyError),
    });
    return true;
  }
}
