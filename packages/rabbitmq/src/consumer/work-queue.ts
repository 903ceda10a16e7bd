/**
 * Runs queued jobs in arrival order, at most `concurrency` at a time. Jobs that have not
 * started can be dropped (when their channel is gone, or on shutdown). @internal
 */
export class WorkQueue<T> {
  private readonly waiting: T[] = [];
  private running = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    private readonly run: (item: T) => Promise<void>,
  ) {}

  /** Number of jobs running now. */
  get active(): number {
    return this.running;
  }

  /** Number of jobs waiting for a slot. */
  get pending(): number {
    return this.waiting.length;
  }

  push(item: T): void {
    this.waiting.push(item);
    this.pump();
  }

  /** Removes waiting jobs that match `predicate` and returns them; running jobs go on. */
  drop(predicate: (item: T) => boolean): T[] {
    const dropped: T[] = [];
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      if (predicate(this.waiting[i]!)) dropped.unshift(...this.waiting.splice(i, 1));
    }
    this.notifyIdle();
    return dropped;
  }

  /** Resolves when nothing is running or waiting. */
  idle(): Promise<void> {
    if (this.running === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.running < this.concurrency && this.waiting.length > 0) {
      const item = this.waiting.shift()!;
      this.running++;
      // `run` handles its own errors; the catch only keeps a bug from stalling the queue.
      void this.run(item)
        .catch(() => undefined)
        .finally(() => {
          this.running--;
          this.pump();
          this.notifyIdle();
        });
    }
  }

  private notifyIdle(): void {
    if (this.running !== 0 || this.waiting.length !== 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
