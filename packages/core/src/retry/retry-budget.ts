import type { Clock } from './clock';
import { systemClock } from './clock';
import { createSlidingCounter } from './sliding-window';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { requireNumber } from './validate';

/** Options of {@link createRetryBudget}. */
export interface RetryBudgetOptions {
  /** Retries allowed per successful call in the window, in [0, 1]. Default 0.2 (seed 004's 20 %). */
  readonly ratio?: number;
  /**
   * Retries allowed per second of window regardless of traffic, so a quiet service can still
   * retry. Default 10.
   */
  readonly minRetriesPerSecond?: number;
  /** Length of the sliding window in milliseconds, at least 10. Default 10 000. */
  readonly windowMs?: number;
  /** Time source. Default {@link systemClock}. */
  readonly clock?: Clock;
}

/**
 * A retry budget: over a sliding window, retries may be at most `ratio` × successful calls plus
 * `minRetriesPerSecond` × window seconds. Unlike the quota, which reacts to failures, a budget
 * scales with traffic: when a dependency fails outright, retries stay a bounded fraction of the
 * load it was handling rather than multiplying it.
 */
export interface RetryBudget {
  /** Whole retries the budget allows right now. */
  available(): number;
  /** Spends one retry if the budget allows it; false otherwise. */
  tryWithdraw(): boolean;
  /** Records one successful call, which earns `ratio` of a retry. */
  recordSuccess(): void;
}

/** Defaults of {@link createRetryBudget}. */
export const RETRY_BUDGET_DEFAULTS = Object.freeze({
  ratio: 0.2,
  minRetriesPerSecond: 10,
  windowMs: 10_000,
});

const SUCCESSES = 0;
const RETRIES = 1;
// Guards floor() against 0.1 * 3 = 0.30000000000000004-style representation error.
const EPSILON = 1e-9;

const BUDGET_KEYS = optionKeys<RetryBudgetOptions>()([
  'ratio',
  'minRetriesPerSecond',
  'windowMs',
  'clock',
]);

/** Refuses keys {@link RetryBudgetOptions} does not declare. @internal */
export function rejectUnknownBudgetOptions(value: unknown, context: string, path = ''): void {
  rejectUnknownOptions(value, BUDGET_KEYS, context, path);
}

/** Creates a {@link RetryBudget}. Throws {@link ConfigurationError} on bad options. */
export function createRetryBudget(options: RetryBudgetOptions = {}): RetryBudget {
  rejectUnknownBudgetOptions(options, 'createRetryBudget');
  const ratio = requireNumber('budget.ratio', options.ratio ?? RETRY_BUDGET_DEFAULTS.ratio, {
    min: 0,
    max: 1,
  });
  const minPerSecond = requireNumber(
    'budget.minRetriesPerSecond',
    options.minRetriesPerSecond ?? RETRY_BUDGET_DEFAULTS.minRetriesPerSecond,
    { min: 0 },
  );
  const windowMs = requireNumber(
    'budget.windowMs',
    options.windowMs ?? RETRY_BUDGET_DEFAULTS.windowMs,
    { min: 10 },
  );
  const clock = options.clock ?? systemClock;
  const reserve = (minPerSecond * windowMs) / 1000;
  const counter = createSlidingCounter(windowMs, 2);

  const available = (): number => {
    const now = clock.now();
    const earned = reserve + ratio * counter.total(SUCCESSES, now);
    return Math.max(0, Math.floor(earned + EPSILON) - counter.total(RETRIES, now));
  };

  return {
    available,
    tryWithdraw() {
      if (available() < 1) return false;
      counter.add(RETRIES, clock.now());
      return true;
    },
    recordSuccess() {
      counter.add(SUCCESSES, clock.now());
    },
  };
}

/** True when `value` looks like a {@link RetryBudget} (as opposed to its options). */
export function isRetryBudget(value: unknown): value is RetryBudget {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as RetryBudget).tryWithdraw === 'function' &&
    typeof (value as RetryBudget).recordSuccess === 'function'
  );
}
