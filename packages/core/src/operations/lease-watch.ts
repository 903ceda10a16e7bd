import { LeaseLostError } from './errors/lease-lost-error';
import type { OperationRef } from './types';

/** The abort signal of one effect run, tied to its lease and to the caller's signal. @internal */
export interface LeaseWatch {
  /** Aborts when the lease runs out (with {@link LeaseLostError}) or the caller aborts. */
  readonly controller: AbortController;
  /** Restarts the lease countdown after an extension: `remainingMs` from now. */
  rearm(remainingMs: number): void;
  /** Stops watching: clears the countdown and lets go of the caller's signal. */
  stop(): void;
}

/**
 * Starts watching the lease of `ref`, `remainingMs` long (database clock), and the caller's
 * signal. The effect sees one signal for both, so it stops work it no longer owns. @internal
 */
export function watchLease(
  ref: OperationRef,
  callerSignal: AbortSignal | undefined,
  remainingMs: number,
): LeaseWatch {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const rearm = (ms: number): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(
      () => {
        controller.abort(new LeaseLostError(ref, {}, 'keep holding'));
      },
      Math.max(0, ms),
    );
    // A pending countdown must not keep the process alive.
    timer.unref?.();
  };
  const onCallerAbort = (): void => controller.abort(callerSignal?.reason);
  if (callerSignal?.aborted) controller.abort(callerSignal.reason);
  else callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  rearm(remainingMs);
  return {
    controller,
    rearm,
    stop: () => {
      if (timer !== undefined) clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    },
  };
}
