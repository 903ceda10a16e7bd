/**
 * A counting semaphore: `take` waits until at least one permit is free, then takes up to
 * `max` of them at once (so a poller can reserve room for a whole receive batch). @internal
 */
export class Permits {
  private free: number;
  private readonly waiters: (() => void)[] = [];
  private closed = false;

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Permits not taken. */
  get available(): number {
    return this.free;
  }

  /**
   * Waits until at least `atLeast` permits are free (at most the size), then takes up to
   * `max` of them; resolves 0 once {@link close} was called.
   */
  async take(max: number, atLeast = 1): Promise<number> {
    const needed = Math.max(1, Math.min(atLeast, this.size));
    while (!this.closed && this.free < needed) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    if (this.closed) return 0;
    const n = Math.min(max, this.free);
    this.free -= n;
    return n;
  }

  /** Gives back `n` permits. */
  give(n: number): void {
    if (n <= 0) return;
    this.free = Math.min(this.size, this.free + n);
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Wakes every waiter; `take` resolves 0 from now on. */
  close(): void {
    this.closed = true;
    for (const wake of this.waiters.splice(0)) wake();
  }
}

/** Runs `task` with one of `permits` held. @internal */
export async function withPermit<T>(permits: Permits, task: () => Promise<T>): Promise<T> {
  await permits.take(1);
  try {
    return await task();
  } finally {
    permits.give(1);
  }
}
