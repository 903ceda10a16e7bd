/**
 * Resolves after `ms`, or at once when one of `signals` aborts (already, or while it waits).
 * Never rejects.
 */
export function sleep(ms: number, ...signals: readonly (AbortSignal | undefined)[]): Promise<void> {
  const watched = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  if (ms <= 0 || watched.some((signal) => signal.aborted)) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      for (const signal of watched) signal.removeEventListener('abort', done);
      resolve();
    }
    for (const signal of watched) signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Races `work` against a time limit: settles as `work` does when it settles within `ms`, else
 * rejects with the error `onTimeout` makes, or with "`onTimeout` did not finish within `ms` ms"
 * when it is text. A result that arrives late goes to `onLate` (to close a connection nobody
 * will use) and is otherwise dropped; a late failure is dropped. The timer does not keep the
 * process alive.
 */
export function withTimeout<T>(
  work: Promise<T>,
  ms: number,
  onTimeout: string | (() => Error),
  onLate?: (value: T) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      reject(
        typeof onTimeout === 'string'
          ? new Error(`${onTimeout} did not finish within ${ms} ms`)
          : onTimeout(),
      );
    }, ms);
    timer.unref();
    work.then(
      (value) => {
        if (expired) return onLate?.(value);
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (expired) return;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * Resolves `true` once `work` fulfils, or `false` when `ms` pass first; rejects as `work` does.
 * For a wait that may give up ("did the drain finish in time?"), where {@link withTimeout}
 * is for a call that must fail at its limit.
 */
export async function finishesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
