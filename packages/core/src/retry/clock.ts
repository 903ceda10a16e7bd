/**
 * Where the retry module reads the time and waits. Inject one to make retries, budgets and
 * breakers deterministic in tests (see {@link createManualClock}).
 */
export interface Clock {
  /** Milliseconds on a monotonic-enough timeline; only differences are used. */
  now(): number;
  /**
   * Resolves after `ms` milliseconds. When `signal` aborts first, rejects with the signal's
   * reason and releases any timer it holds.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock: `Date.now()` and `setTimeout`. */
export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  sleep: (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
});
