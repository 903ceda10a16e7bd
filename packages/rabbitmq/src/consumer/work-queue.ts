/** How a {@link WorkQueue} groups its jobs. @internal */
export interface WorkQueueBatching {
  /** Most jobs handed to one run. */
  readonly size: number;
  /**
   * How long a free slot waits for a short batch to fill before it runs what is there; 0 runs
   * at once (a batch is then what queued up while every slot was busy).
   */
  readonly waitMs: number;
}

/**
 * Runs queued jobs in arrival order, at most `concurrency` runs at a time, each run taking
 * up to `batching.size` jobs (one by default). Jobs that have not started can be dropped
 * (when their channel is gone, or on shutdown). @internal
 */
export class WorkQueue<T> {
  private readonly waiting: T[] = [];
  private running = 0;
  private idleWaiters: Array<() => void> = [];
  /** Set while a free slot waits for a short batch to fill. */
  private linger: ReturnType<typeof setTimeout> | undefined;
  /** True while the linger that just ended lets short batches run. */
  private lingered = false;

  constructor(
    private readonly concurrency: number,
    private readonly run: (items: readonly T[]) => Promise<void>,
    private readonly batching: WorkQueueBatching = { size: 1, waitMs: 0 },
  ) {}

  /** Number of runs going on now. */
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
    if (this.waiting.length === 0) this.endLinger();
    this.notifyIdle();
    return dropped;
  }

  /** Resolves when nothing is running or waiting. */
  idle(): Promise<void> {
    if (this.running === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    const { size, waitMs } = this.batching;
    while (this.running < this.concurrency && this.waiting.length > 0) {
      if (this.waiting.length < size && waitMs > 0 && !this.lingered) {
        // A short batch: give the deliveries already on their way a moment to join it.
        this.linger ??= setTimeout(() => {
          this.linger = undefined;
          this.lingered = true;
          this.pump();
          this.lingered = false;
        }, waitMs);
        return;
      }
      this.endLinger();
      const items = this.waiting.splice(0, size);
      this.running++;
      // `run` handles its own errors; the catch only keeps a bug from stalling the queue.
      void this.run(items)
        .catch(() => undefined)
        .finally(() => {
          this.running--;
          this.pump();
          this.notifyIdle();
        });
    }
  }

  private endLinger(): void {
    if (this.linger === undefined) return;
    clearTimeout(this.linger);
    this.linger = undefined;
  }

  private notifyIdle(): void {
    if (this.running !== 0 || this.waiting.length !== 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
