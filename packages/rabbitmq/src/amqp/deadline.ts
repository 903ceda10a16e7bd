/**
 * Races `work` against a timer: resolves or rejects as `work` does if it settles within `ms`,
 * else calls `onTimeout` and rejects with what it returns. A result that arrives late is
 * handed to `onLate` (to close a connection nobody will use) and otherwise dropped. @internal
 */
export function withDeadline<T>(
  work: Promise<T>,
  ms: number,
  onTimeout: () => Error,
  onLate?: (value: T) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      reject(onTimeout());
    }, ms);
    work.then(
      (value) => {
        if (!expired) {
          clearTimeout(timer);
          resolve(value);
        } else onLate?.(value);
      },
      (error: unknown) => {
        if (expired) return;
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
