/** Counts events per second over a sliding window of whole seconds. @internal */
export class RateWindow {
  private readonly buckets: number[];
  private readonly seconds: number[];

  constructor(private readonly windowSeconds = 10) {
    this.buckets = new Array<number>(windowSeconds).fill(0);
    this.seconds = new Array<number>(windowSeconds).fill(-1);
  }

  /** Records `count` events now. */
  add(count: number, now = Date.now()): void {
    const second = Math.floor(now / 1000);
    const slot = second % this.windowSeconds;
    if (this.seconds[slot] !== second) {
      this.seconds[slot] = second;
      this.buckets[slot] = 0;
    }
    this.buckets[slot]! += count;
  }

  /** Events per second over the window ending now. */
  perSecond(now = Date.now()): number {
    const second = Math.floor(now / 1000);
    let total = 0;
    for (let i = 0; i < this.windowSeconds; i += 1) {
      if (second - this.seconds[i]! < this.windowSeconds) total += this.buckets[i]!;
    }
    return total / this.windowSeconds;
  }
}
