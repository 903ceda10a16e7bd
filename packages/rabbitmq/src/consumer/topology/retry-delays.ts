import { ConfigurationError } from '@justonce/core';

/**
 * The delays, in milliseconds, of the retry queues used when a delay is computed rather
 * than listed: each computed delay is rounded up to the next of these (and capped at the
 * last), so a handful of queues serve any backoff. Each retry queue has one message TTL,
 * so messages leave it in the order they entered: no head-of-line blocking.
 */
export const DEFAULT_DELAY_LADDER_MS: readonly number[] = [
  100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000,
  3_600_000,
];

/** Longest delay accepted: RabbitMQ's message TTL is a 32-bit value. @internal */
export const MAX_DELAY_MS = 2 ** 31 - 1;

/** How the consumer chooses the delay before a failed message is delivered again. @internal */
export interface RetryDelays {
  /** The delay, in ms, for the retry queue after failed attempt `attempt` (1-based). */
  delayFor(attempt: number, suggestedMs: number): number;
  /** Every delay a retry queue can have, in order, declared up front. */
  readonly tiers: readonly number[];
}

/** Validates a list of delays (non-empty, positive integers, at most 2^31-1). @internal */
export function validateDelays(delays: unknown, what: string): number[] {
  if (!Array.isArray(delays) || delays.length === 0) {
    throw new ConfigurationError(`${what} must be a non-empty array of milliseconds`);
  }
  for (const d of delays) {
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > MAX_DELAY_MS) {
      throw new ConfigurationError(`${what} must hold integers from 1 to ${MAX_DELAY_MS}`, {
        value: d,
      });
    }
  }
  return [...(delays as number[])];
}

/**
 * Builds the delay rule:
 * - `delaysMs` listed: attempt `n` waits `delaysMs[n-1]`, the last entry repeating;
 * - otherwise `backoff(attempt)` when given, else the inbox's suggested delay, rounded up to
 *   the next step of `ladderMs` (capped at its last step).
 *
 * @internal
 */
export function retryDelays(options: {
  delaysMs?: readonly number[] | undefined;
  backoff?: ((attempt: number) => number) | undefined;
  ladderMs?: readonly number[] | undefined;
}): RetryDelays {
  if (options.delaysMs !== undefined && options.backoff !== undefined) {
    throw new ConfigurationError('retry: give delaysMs or backoff, not both');
  }
  if (options.delaysMs !== undefined) {
    const delays = validateDelays(options.delaysMs, 'retry.delaysMs');
    return {
      tiers: [...new Set(delays)].sort((a, b) => a - b),
      delayFor: (attempt) => delays[Math.min(Math.max(1, attempt), delays.length) - 1]!,
    };
  }
  if (options.backoff !== undefined && typeof options.backoff !== 'function') {
    throw new ConfigurationError('retry.backoff must be a function of the attempt number');
  }
  const ladder = [
    ...new Set(validateDelays(options.ladderMs ?? DEFAULT_DELAY_LADDER_MS, 'retry.ladderMs')),
  ].sort((a, b) => a - b);
  const backoff = options.backoff;
  return {
    tiers: ladder,
    delayFor: (attempt, suggestedMs) => {
      const wanted = backoff ? backoff(attempt) : suggestedMs;
      return roundUpToTier(Number.isFinite(wanted) ? wanted : 0, ladder);
    },
  };
}

/** The smallest tier at or above `delayMs`, or the largest tier. @internal */
export function roundUpToTier(delayMs: number, tiers: readonly number[]): number {
  for (const tier of tiers) if (tier >= delayMs) return tier;
  return tiers[tiers.length - 1]!;
}
