/** Options of {@link fullJitterBackoff}. */
export interface BackoffOptions {
  /** First delay ceiling in milliseconds. Default 100. */
  readonly baseMs?: number;
  /** Largest delay ceiling in milliseconds. Default 20 000 (the SDKs' MAX_BACKOFF). */
  readonly capMs?: number;
  /** Source of randomness in [0, 1); injectable for tests. Default `Math.random`. */
  readonly random?: () => number;
}

/**
 * Exponential backoff with full jitter: a uniformly random delay in
 * `[0, min(cap, base * 2^(attempt-1)))`. Full jitter spreads retrying clients apart so they
 * do not come back in lockstep. `attempt` is 1-based: the delay before the second try is
 * `fullJitterBackoff(1)`.
 */
export function fullJitterBackoff(attempt: number, options: BackoffOptions = {}): number {
  const base = options.baseMs ?? 100;
  const cap = options.capMs ?? 20_000;
  const random = options.random ?? Math.random;
  const exponent = Math.max(0, Math.floor(attempt) - 1);
  // 2^exponent overflows to Infinity for large attempts; min() with cap keeps it finite.
  const ceiling = Math.min(cap, base * 2 ** exponent);
  return Math.floor(ceiling * random());
}
