import { fullJitterBackoff } from './backoff';

describe('fullJitterBackoff', () => {
  it('doubles the ceiling per attempt and scales it by the random draw', () => {
    const half = () => 0.5;
    expect([1, 2, 3, 4].map((n) => fullJitterBackoff(n, { baseMs: 100, random: half }))).toEqual([
      50, 100, 200, 400,
    ]);
  });

  it('caps the ceiling and stays finite for huge attempt numbers', () => {
    const almostOne = () => 0.999;
    expect(fullJitterBackoff(8, { baseMs: 100, capMs: 1_000, random: almostOne })).toBe(999);
    expect(fullJitterBackoff(5_000, { random: almostOne })).toBe(19_980);
  });

  it('can return zero: full jitter starts at no delay', () => {
    expect(fullJitterBackoff(3, { random: () => 0 })).toBe(0);
  });

  it('treats attempts below 1 as the first', () => {
    expect(fullJitterBackoff(0, { baseMs: 100, random: () => 0.5 })).toBe(50);
  });
});
