import { describeError } from './describe-error';
import { fail } from './finalize';
import type { OperationsRuntime } from './runtime';
import { recordKeyOf } from './target';
import type { OperationRef } from './types';

/**
 * Records a failure of `ref`'s execution, retriable or final, logging `could not record
 * <what>` (not throwing) when the record cannot be written: the failure itself is what the
 * caller must see. @internal
 */
export async function recordFailure(
  rt: OperationsRuntime,
  ref: OperationRef,
  error: unknown,
  retriable: boolean,
  what: string,
): Promise<void> {
  try {
    await fail(rt, ref, error, { retriable });
  } catch (recordError) {
    // The record stays as it is (another owner's, or IN_PROGRESS until its lease runs out).
    rt.options.logger.warn(`could not record ${what}`, {
      ...recordKeyOf(ref),
      ownerId: ref.ownerId,
      error: describeError(recordError),
    });
  }
}

/** Records a failed effect as `isRetriable` classifies it; never throws. @internal */
export async function recordEffectFailure(
  rt: OperationsRuntime,
  ref: OperationRef,
  error: unknown,
): Promise<void> {
  const retriable = safeIsRetriable(rt, error);
  await recordFailure(rt, ref, error, retriable, 'the failure of an operation');
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
