/**
 * Wakes a relay's idle loops one at a time; remembers wakes that found nobody waiting, and
 * keeps one pending wake-up for the earliest scheduled retry. @internal
 */
export class Waker {
  generation = 0;
  private readonly waiters: Array<() => void> = [];
  private retryTimer: NodeJS.Timeout | null = null;
  private retryAt = Number.POSITIVE_INFINITY;

  /** Wakes one waiting loop (or marks the wake for the next loop that looks). */
  one(): void {
    this.generation += 1;
    this.waiters.shift()?.();
  }

  /** Wakes every waiting loop. */
  all(): void {
    this.generation += 1;
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /**
   * Wakes one loop in `ms`, unless a wake-up is already due sooner: only the earliest
   * retry matters, since the cycle it starts picks up every event due by then.
   */
  oneAfter(ms: number): void {
    const at = Date.now() + ms;
    if (at >= this.retryAt) return;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryAt = at;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.retryAt = Number.POSITIVE_INFINITY;
      this.one();
    }, ms);
  }

  /** Drops the pending {@link oneAfter} wake-up, if any. */
  cancelPending(): void {
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.retryAt = Number.POSITIVE_INFINITY;
  }

  /** Sleeps up to `ms`, or until woken. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        const at = this.waiters.indexOf(done);
        if (at >= 0) this.waiters.splice(at, 1);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.push(done);
    });
  }
}
