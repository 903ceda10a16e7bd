import { hasErrorCode } from '@justonce/core';
import { DEFAULT_DELAY_LADDER_MS, retryDelays, roundUpToTier } from './retry-delays';

describe('retryDelays', () => {
  it('uses listed delays by attempt, repeating the last', () => {
    const rule = retryDelays({ delaysMs: [200, 1_000, 5_000] });
    expect([1, 2, 3, 4, 9].map((a) => rule.delayFor(a, 0))).toEqual([
      200, 1_000, 5_000, 5_000, 5_000,
    ]);
    expect(rule.tiers).toEqual([200, 1_000, 5_000]);
  });

  it("rounds the inbox's suggested delay up to the ladder", () => {
    const rule = retryDelays({});
    expect(rule.delayFor(1, 0)).toBe(100);
    expect(rule.delayFor(1, 101)).toBe(250);
    expect(rule.delayFor(3, 1_000)).toBe(1_000);
    expect(rule.delayFor(9, 10 ** 9)).toBe(DEFAULT_DELAY_LADDER_MS.at(-1));
    expect(rule.delayFor(1, Number.NaN)).toBe(100);
  });

  it('rounds a backoff function up to a custom ladder', () => {
    const rule = retryDelays({ backoff: (attempt) => attempt * 300, ladderMs: [500, 100, 1_000] });
    expect([1, 2, 3, 4].map((a) => rule.delayFor(a, 0))).toEqual([500, 1_000, 1_000, 1_000]);
    expect(rule.tiers).toEqual([100, 500, 1_000]);
  });

  it.each([
    [{ delaysMs: [] }],
    [{ delaysMs: [0] }],
    [{ delaysMs: [1.5] }],
    [{ delaysMs: [2 ** 31] }],
    [{ delaysMs: [100], backoff: () => 1 }],
    [{ ladderMs: [-1] }],
  ])('refuses %j', (options) => {
    let caught: unknown;
    try {
      retryDelays(options);
    } catch (error) {
      caught = error;
    }
    expect(hasErrorCode(caught, 'INVALID_CONFIG')).toBe(true);
  });

  it('roundUpToTier caps at the largest tier', () => {
    expect(roundUpToTier(7, [5, 10])).toBe(10);
    expect(roundUpToTier(11, [5, 10])).toBe(10);
  });
});
