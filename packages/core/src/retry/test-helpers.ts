import type { AttemptContext, GiveUpEvent, RetryEvent } from './execute';
import { createManualClock, type ManualClock } from './manual-clock';
import { retryPolicy, type RetryPolicyOptions } from './retry-policy';

/** @internal Test helper: a random source that returns `values` in turn, then repeats them. */
export function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length] as number;
}

/** @internal Test helper: the settled outcome of a promise. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** @internal Test helper: runs every pending timer of `clock`, then returns how `promise` settled. */
export async function settle<T>(clock: ManualClock, promise: Promise<T>): Promise<Outcome<T>> {
  const outcome = promise.then(
    (value): Outcome<T> => ({ ok: true, value }),
    (error: unknown): Outcome<T> => ({ ok: false, error }),
  );
  await clock.runAll();
  return outcome;
}

/** @internal Test helper: the error of a failed outcome; fails the test when it succeeded. */
export function errorOf<T>(outcome: Outcome<T>): unknown {
  if (outcome.ok) throw new Error(`expected a failure, got ${String(outcome.value)}`);
  return outcome.error;
}

/** @internal Test helper: a connection reset, a transient error. */
export function reset(n: number): Error {
  return Object.assign(new Error(`reset ${n}`), { code: 'ECONNRESET' });
}

/** @internal Test helper: a policy on a manual clock that records every retry, give-up and attempt start time. */
export function harness(options: RetryPolicyOptions = {}) {
  const clock = createManualClock();
  const policy = retryPolicy({ clock, random: () => 0.5, ...options });
  const retries: RetryEvent[] = [];
  const giveUps: GiveUpEvent[] = [];
  const starts: number[] = [];
  policy.onRetry((event) => retries.push(event));
  policy.onGiveUp((event) => giveUps.push(event));
  /** Wraps an attempt body so its start time is recorded. */
  const timed =
    <T>(body: (context: AttemptContext) => Promise<T> | T) =>
    (context: AttemptContext) => {
      starts.push(clock.now());
      return body(context);
    };
  /** An attempt that never settles unless its signal aborts. */
  const hang = (context: AttemptContext): Promise<never> =>
    new Promise((_resolve, reject) => {
      context.signal.addEventListener('abort', () => reject(context.signal.reason));
    });
  return { clock, policy, retries, giveUps, starts, timed, hang };
}
