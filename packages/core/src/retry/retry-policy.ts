import { optionKeys, optionalFunction, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import type { CircuitBreaker, CircuitBreakerOptions } from './circuit-breaker';
import {
  createCircuitBreaker,
  isCircuitBreaker,
  rejectUnknownBreakerOptions,
} from './circuit-breaker';
import { classifyError } from './classify';
import type { Clock } from './clock';
import { systemClock } from './clock';
import type { RetryDecision, RetryDecisionInput } from './decide';
import { computeBackoff, decideRetry } from './decide';
import type { ErrorClass, ErrorClassifier } from './error-class';
import { ERROR_CLASSES } from './error-class';
import type { Attempt, ExecuteOptions, GiveUpEvent, RetryEvent } from './execute';
import { executeWithRetry } from './execute';
import type { Dispose } from './listeners';
import { createListenerSet } from './listeners';
import type { RetryBudget, RetryBudgetOptions } from './retry-budget';
import { createRetryBudget, isRetryBudget, rejectUnknownBudgetOptions } from './retry-budget';
import type { RetryQuota, RetryQuotaOptions } from './retry-quota';
import { createRetryQuota, isRetryQuota, rejectUnknownQuotaOptions } from './retry-quota';
import type { RetrySettings } from './retry-settings';
import { RETRY_POLICY_DEFAULTS } from './retry-settings';
import { requireNumber } from './validate';

/** Options of {@link retryPolicy}. Every one is optional. */
export interface RetryPolicyOptions {
  /** Attempts in total, the first included; an integer >= 1, or `Infinity` with a `deadlineMs`. Default 3. */
  readonly maxAttempts?: number;
  /** Backoff base for transient errors in milliseconds: the delay after attempt n is random in `[0, min(maxDelayMs, base * 2^(n-1)))`. Default 100. */
  readonly baseDelayMs?: number;
  /** Backoff base for throttling errors in milliseconds. Default 500. */
  readonly throttlingBaseDelayMs?: number;
  /** Largest backoff ceiling in milliseconds. Default 20 000. */
  readonly maxDelayMs?: number;
  /** Total time for all attempts and sleeps, in milliseconds from the start of the call. Default: none. */
  readonly deadlineMs?: number;
  /** Time for one attempt in milliseconds; must be below `deadlineMs`. Default: none. */
  readonly attemptTimeoutMs?: number;
  /** The caller's classification rule, run before the built-in ones (see {@link classifyError}). */
  readonly classify?: ErrorClassifier;
  /** Class of errors no rule recognises. Default `'transient'`. */
  readonly defaultErrorClass?: ErrorClass;
  /**
   * The retry quota token bucket: an instance to share, options for a private one, or `false`
   * for none. Default: a private bucket with the standard-mode numbers (500 / 5 / 10 / 1).
   */
  readonly quota?: RetryQuota | RetryQuotaOptions | false;
  /** A retry budget: an instance to share, options for a private one, or `false`. Default `false`. */
  readonly budget?: RetryBudget | RetryBudgetOptions | false;
  /** A circuit breaker: an instance to share, options for a private one, or `false`. Default `false`. */
  readonly circuitBreaker?: CircuitBreaker | CircuitBreakerOptions | false;
  /** Time source for deadlines, timeouts and sleeps; also given to private budgets and breakers. Default {@link systemClock}. */
  readonly clock?: Clock;
  /** Source of randomness in [0, 1) for jitter. Default `Math.random`. */
  readonly random?: () => number;
  /**
   * Sleep the full backoff ceiling instead of a random fraction of it. Clients that fail
   * together then retry together, in lockstep: only for tests and demonstrations. Default false.
   */
  readonly dangerouslyDisableJitter?: boolean;
}

const POLICY_KEYS = optionKeys<RetryPolicyOptions>()([
  'maxAttempts',
  'baseDelayMs',
  'throttlingBaseDelayMs',
  'maxDelayMs',
  'deadlineMs',
  'attemptTimeoutMs',
  'classify',
  'defaultErrorClass',
  'quota',
  'budget',
  'circuitBreaker',
  'clock',
  'random',
  'dangerouslyDisableJitter',
]);

/** Refuses unknown keys, in the options and in the quota, budget and breaker given as options. */
function rejectUnknownPolicyOptions(options: RetryPolicyOptions): void {
  rejectUnknownOptions(options, POLICY_KEYS, 'retryPolicy');
  // An instance is used as is; only options objects are the caller's spelling.
  if (!isRetryQuota(options.quota)) {
    rejectUnknownQuotaOptions(options.quota, 'retryPolicy', 'quota');
  }
  if (!isRetryBudget(options.budget)) {
    rejectUnknownBudgetOptions(options.budget, 'retryPolicy', 'budget');
  }
  if (!isCircuitBreaker(options.circuitBreaker)) {
    rejectUnknownBreakerOptions(options.circuitBreaker, 'retryPolicy', 'circuitBreaker');
  }
}

/**
 * An immutable retry policy. The stateful parts (quota, budget, breaker) are shared objects:
 * a policy only holds references to them.
 */
export interface RetryPolicy {
  /** The settings in force, defaults applied. */
  readonly settings: RetrySettings;
  /** The retry quota in use, if any. */
  readonly quota: RetryQuota | undefined;
  /** The retry budget in use, if any. */
  readonly budget: RetryBudget | undefined;
  /** The circuit breaker in use, if any. */
  readonly circuitBreaker: CircuitBreaker | undefined;
  /** Classifies `error` with this policy's `classify` and `defaultErrorClass`. */
  classify(error: unknown): ErrorClass;
  /**
   * The jittered delay to wait after `attempt` (1-based) fails, for an error of the given class.
   * This is "how long before redelivery attempt `attempt + 1`" for transports with native delays.
   */
  backoffMs(attempt: number, errorClass?: Exclude<ErrorClass, 'non-retriable'>): number;
  /**
   * Decides whether to retry after a failed attempt, without running anything and without
   * touching the quota, budget or breaker: classification, `maxAttempts`, `deadlineMs` (when
   * `elapsedMs` is given) and the delay. Consumes one random number when it retries.
   */
  decide(input: RetryDecisionInput): RetryDecision;
  /**
   * Runs `fn` until it succeeds or the policy gives up. Each attempt gets its number and a
   * signal that aborts on the attempt timeout, the deadline or the caller's `signal`.
   *
   * Rejects with: the error itself when it is non-retriable; {@link RetryAttemptsExhaustedError},
   * {@link RetryDeadlineExceededError}, {@link RetryQuotaExhaustedError},
   * {@link RetryBudgetExhaustedError} or {@link CircuitOpenError} (each with the last error as
   * `cause`); or the caller signal's reason when it aborts.
   */
  execute<T>(fn: Attempt<T>, options?: ExecuteOptions): Promise<T>;
  /** A new policy with `overrides` applied; it shares this one's quota, budget and breaker unless overridden. Listeners are not copied. */
  with(overrides: RetryPolicyOptions): RetryPolicy;
  /** Calls `listener` before each backoff sleep of {@link RetryPolicy.execute}; returns its disposer. */
  onRetry(listener: (event: RetryEvent) => void): Dispose;
  /** Calls `listener` when {@link RetryPolicy.execute} fails for good; returns its disposer. */
  onGiveUp(listener: (event: GiveUpEvent) => void): Dispose;
}

/**
 * Creates a {@link RetryPolicy}. Validates every option now and throws
 * {@link ConfigurationError} on the first that cannot work.
 *
 * @example
 * const policy = retryPolicy({ maxAttempts: 5, deadlineMs: 10_000, attemptTimeoutMs: 2_000 });
 * const body = await policy.execute(({ signal }) => fetch(url, { signal }).then(check));
 */
export function retryPolicy(options: RetryPolicyOptions = {}): RetryPolicy {
  rejectUnknownPolicyOptions(options);
  const settings = resolveSettings(options);
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  if (typeof random !== 'function') {
    throw new ConfigurationError('random must be a function', { option: 'random' });
  }
  optionalFunction(options.classify, 'classify');
  const quota = resolvePart(options.quota, {}, isRetryQuota, createRetryQuota);
  const budget = resolvePart(options.budget, false, isRetryBudget, (o) =>
    createRetryBudget({ clock, ...o }),
  );
  const circuitBreaker = resolvePart(options.circuitBreaker, false, isCircuitBreaker, (o) =>
    createCircuitBreaker({ clock, ...o }),
  );

  const classifyOptions = { classify: options.classify, defaultClass: settings.defaultErrorClass };
  const classify = (error: unknown): ErrorClass => classifyError(error, classifyOptions);
  const decide = (input: RetryDecisionInput): RetryDecision =>
    decideRetry(settings, random, classify(input.error), input);
  const retryListeners = createListenerSet<RetryEvent>();
  const giveUpListeners = createListenerSet<GiveUpEvent>();
  const parts = {
    settings,
    clock,
    classify,
    decide,
    quota,
    budget,
    breaker: circuitBreaker,
    retryListeners,
    giveUpListeners,
  };

  return Object.freeze({
    settings,
    quota,
    budget,
    circuitBreaker,
    classify,
    decide,
    backoffMs: (attempt: number, errorClass: Exclude<ErrorClass, 'non-retriable'> = 'transient') =>
      computeBackoff(settings, random, attempt, errorClass),
    execute: <T>(fn: Attempt<T>, executeOptions?: ExecuteOptions) =>
      executeWithRetry(parts, fn, executeOptions),
    with: (overrides: RetryPolicyOptions) =>
      retryPolicy({
        ...options,
        quota: quota ?? false,
        budget: budget ?? false,
        circuitBreaker: circuitBreaker ?? false,
        ...overrides,
      }),
    onRetry: retryListeners.add,
    onGiveUp: giveUpListeners.add,
  });
}

function resolveSettings(options: RetryPolicyOptions): RetrySettings {
  const d = RETRY_POLICY_DEFAULTS;
  const deadlineMs =
    options.deadlineMs === undefined
      ? undefined
      : requireNumber('deadlineMs', options.deadlineMs, { min: 0, minExclusive: true });
  const maxAttempts = options.maxAttempts ?? d.maxAttempts;
  if (!(maxAttempts === Infinity && deadlineMs !== undefined)) {
    requireNumber('maxAttempts', maxAttempts, { min: 1, integer: true });
  }
  const attemptTimeoutMs =
    options.attemptTimeoutMs === undefined
      ? undefined
      : requireNumber('attemptTimeoutMs', options.attemptTimeoutMs, {
          min: 0,
          minExclusive: true,
        });
  if (
    deadlineMs !== undefined &&
    attemptTimeoutMs !== undefined &&
    attemptTimeoutMs >= deadlineMs
  ) {
    throw new ConfigurationError(
      `attemptTimeoutMs (${attemptTimeoutMs}) must be shorter than deadlineMs (${deadlineMs}), or only one attempt fits`,
      { option: 'attemptTimeoutMs', attemptTimeoutMs, deadlineMs },
    );
  }
  const defaultErrorClass = options.defaultErrorClass ?? d.defaultErrorClass;
  if (!ERROR_CLASSES.includes(defaultErrorClass)) {
    throw new ConfigurationError(
      `defaultErrorClass must be one of ${ERROR_CLASSES.join(', ')}, got ${String(defaultErrorClass)}`,
      { option: 'defaultErrorClass', value: defaultErrorClass },
    );
  }
  return Object.freeze({
    maxAttempts,
    baseDelayMs: requireNumber('baseDelayMs', options.baseDelayMs ?? d.baseDelayMs, { min: 0 }),
    throttlingBaseDelayMs: requireNumber(
      'throttlingBaseDelayMs',
      options.throttlingBaseDelayMs ?? d.throttlingBaseDelayMs,
      { min: 0 },
    ),
    maxDelayMs: requireNumber('maxDelayMs', options.maxDelayMs ?? d.maxDelayMs, { min: 0 }),
    deadlineMs,
    attemptTimeoutMs,
    defaultErrorClass,
    dangerouslyDisableJitter: options.dangerouslyDisableJitter === true,
  });
}

/** An instance is used as is, options build a private one, `false` means none. */
function resolvePart<T, O extends object>(
  value: T | O | false | undefined,
  fallback: O | false,
  isInstance: (value: unknown) => value is T,
  create: (options: O) => T,
): T | undefined {
  const chosen = value === undefined ? fallback : value;
  if (chosen === false) return undefined;
  if (isInstance(chosen)) return chosen;
  return create(chosen as O);
}
