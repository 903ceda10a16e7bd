/**
 * @internal Counts events over the last `windowMs`, in `buckets` slices: an event leaves the
 * count once its whole slice is older than the window, so the window is exact to one slice.
 */
export interface SlidingCounter {
  add(key: number, now: number, amount?: number): void;
  total(key: number, now: number): number;
  reset(): void;
}

/** @internal */
export function createSlidingCounter(windowMs: number, keys: number, buckets = 10): SlidingCounter {
  const sliceMs = windowMs / buckets;
  // Ring of slices; `slot[i]` is the absolute slice number the counts in `counts[i]` belong to.
  const slot = new Array<number>(buckets).fill(-Infinity);
  const counts = Array.from({ length: buckets }, () => new Array<number>(keys).fill(0));

  const sliceOf = (now: number): number => Math.floor(now / sliceMs);
  const index = (slice: number): number => ((slice % buckets) + buckets) % buckets;

  return {
    add(key, now, amount = 1) {
      const slice = sliceOf(now);
      const i = index(slice);
      const row = counts[i] as number[];
      if (slot[i] !== slice) {
        slot[i] = slice;
        row.fill(0);
      }
      row[key] = (row[key] ?? 0) + amount;
    },
    total(key, now) {
      const oldest = sliceOf(now) - buckets + 1;
      let sum = 0;
      for (let i = 0; i < buckets; i++) {
        if ((slot[i] as number) >= oldest) sum += (counts[i] as number[])[key] ?? 0;
      }
      return sum;
    },
    reset() {
      slot.fill(-Infinity);
      for (const row of counts) row.fill(0);
    },
  };
}
