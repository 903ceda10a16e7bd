import { rebuildDelayMs } from './producer-state';

describe('rebuildDelayMs', () => {
  it('connects the first rebuild at once, then waits half fixed and half jitter, doubling to 2.5–5 s', () => {
    const low = (n: number): number => rebuildDelayMs(n, () => 0);
    const high = (n: number): number => rebuildDelayMs(n, () => 0.999_999);
    expect([1, 2, 3, 4, 5, 6, 9].map(low)).toEqual([0, 250, 500, 1_000, 2_000, 2_500, 2_500]);
    expect([1, 2, 3, 4, 5, 6, 9].map(high)).toEqual([0, 499, 999, 1_999, 3_999, 4_999, 4_999]);
  });
});
