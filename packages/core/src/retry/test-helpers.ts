import type { ManualClock } from './manual-clock';

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
