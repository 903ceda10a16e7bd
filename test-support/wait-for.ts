export interface WaitForOptions {
  /** How long to keep polling before giving up; 15 s by default. */
  readonly timeoutMs?: number;
  /** The pause between two checks; 25 ms by default. */
  readonly intervalMs?: number;
}

/**
 * Polls `check` until it returns a truthy value and resolves to that value, or rejects after
 * `timeoutMs` with a message naming what was awaited, so a test waiting on something the
 * system does in the background fails with a reason instead of hanging until Jest's timeout.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  options: WaitForOptions = {},
): Promise<NonNullable<T>> {
  const { timeoutMs = 15_000, intervalMs = 25 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
