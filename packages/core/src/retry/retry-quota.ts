import { optionKeys, rejectUnknownOptions } from '../config/options';
import { requireNumber } from './validate';

/** Options of {@link createRetryQuota}; the defaults are the SDKs' standard-mode numbers. */
export interface RetryQuotaOptions {
  /** Tokens the bucket starts with and never exceeds. Default 500. */
  readonly capacity?: number;
  /** Tokens one retry takes. Default 5. */
  readonly retryCost?: number;
  /** Tokens one retry after a timeout takes. Default 10. */
  readonly timeoutRetryCost?: number;
  /** Tokens a call that succeeds at its first attempt gives back. Default 1. */
  readonly successIncrement?: number;
}

/** Which cost a retry is charged. */
export type RetryCostKind = 'timeout' | 'other';

/**
 * A retry quota token bucket (the SDKs' "standard" retry mode): every retry takes tokens,
 * successes put them back, and when the bucket runs dry retrying stops until calls succeed
 * again. Share one quota between every policy that calls the same dependency.
 *
 * Not a rate limiter: first attempts never take tokens, only retries do.
 */
export interface RetryQuota {
  /** Tokens left now. */
  readonly available: number;
  /** Takes the cost of one retry; returns the tokens taken, or `undefined` when too few remain. */
  tryAcquire(kind: RetryCostKind): number | undefined;
  /**
   * Records a successful call: gives back `retryCost` (what the retry that succeeded took),
   * or `successIncrement` when the call needed no retry. Never exceeds `capacity`.
   */
  recordSuccess(retryCost?: number): void;
  /** Returns tokens taken by {@link RetryQuota.tryAcquire} for a retry that did not happen. */
  release(tokens: number): void;
}

/** The standard-mode numbers used when an option is left out. */
export const RETRY_QUOTA_DEFAULTS = Object.freeze({
  capacity: 500,
  retryCost: 5,
  timeoutRetryCost: 10,
  successIncrement: 1,
});

const QUOTA_KEYS = optionKeys<RetryQuotaOptions>()([
  'capacity',
  'retryCost',
  'timeoutRetryCost',
  'successIncrement',
]);

/** Refuses keys {@link RetryQuotaOptions} does not declare. @internal */
export function rejectUnknownQuotaOptions(value: unknown, context: string, path = ''): void {
  rejectUnknownOptions(value, QUOTA_KEYS, context, path);
}

/** Creates a {@link RetryQuota}, full. Throws {@link ConfigurationError} on bad options. */
export function createRetryQuota(options: RetryQuotaOptions = {}): RetryQuota {
  rejectUnknownQuotaOptions(options, 'createRetryQuota');
  const capacity = requireNumber(
    'quota.capacity',
    options.capacity ?? RETRY_QUOTA_DEFAULTS.capacity,
    { min: 1, integer: true },
  );
  const costRange = { min: 0, max: capacity, integer: true };
  const retryCost = requireNumber(
    'quota.retryCost',
    options.retryCost ?? RETRY_QUOTA_DEFAULTS.retryCost,
    costRange,
  );
  const timeoutRetryCost = requireNumber(
    'quota.timeoutRetryCost',
    options.timeoutRetryCost ?? RETRY_QUOTA_DEFAULTS.timeoutRetryCost,
    costRange,
  );
  const successIncrement = requireNumber(
    'quota.successIncrement',
    options.successIncrement ?? RETRY_QUOTA_DEFAULTS.successIncrement,
    costRange,
  );
  let available = capacity;
  const give = (tokens: number): void => {
    if (Number.isFinite(tokens) && tokens > 0) available = Math.min(capacity, available + tokens);
  };
  return {
    get available() {
      return available;
    },
    tryAcquire(kind) {
      const cost = kind === 'timeout' ? timeoutRetryCost : retryCost;
      if (cost > available) return undefined;
      available -= cost;
      return cost;
    },
    recordSuccess(cost) {
      give(cost === undefined ? successIncrement : cost);
    },
    release: give,
  };
}

/** True when `value` looks like a {@link RetryQuota} (as opposed to its options). */
export function isRetryQuota(value: unknown): value is RetryQuota {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as RetryQuota).tryAcquire === 'function' &&
    typeof (value as RetryQuota).recordSuccess === 'function'
  );
}
