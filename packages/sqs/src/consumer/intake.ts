import type { Intake } from '@justonce/core/transport';
import type { ConsumerRuntime } from './runtime';

/**
 * The consumer's intake for the `resilience` option: while the breaker is open the pollers
 * stop receiving, and the messages in hand that the breaker refuses are given back to SQS
 * visible at the probe time (see `settle`), so the heartbeat does not keep them hidden.
 * @internal
 */
export function sqsIntake<R>(rt: ConsumerRuntime<R>): Intake {
  return {
    pause(probeInMs) {
      rt.intakePausedUntil = Date.now() + probeInMs;
    },
    resume() {
      if (rt.intakePausedUntil === undefined) return;
      rt.intakePausedUntil = undefined;
      const resumed = rt.intakeResumed;
      rt.intakeResumed = new AbortController();
      resumed.abort();
    },
  };
}

/** Resolves when the intake resumes or the consumer stops; at once when it is not paused. @internal */
export async function intakeOpen<R>(rt: ConsumerRuntime<R>): Promise<void> {
  if (rt.intakePausedUntil === undefined) return;
  const wake = AbortSignal.any([rt.intakeResumed.signal, rt.receiveAbort.signal]);
  if (wake.aborted) return;
  await new Promise<void>((resolve) =>
    wake.addEventListener('abort', () => resolve(), { once: true }),
  );
}
