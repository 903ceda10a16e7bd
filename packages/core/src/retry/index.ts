export { backoffBoundsOption, fullJitterBackoff } from './backoff';
export type { BackoffBounds } from './backoff';
export type { BackoffOptions } from './backoff';

export { systemClock } from './clock';
export type { Clock } from './clock';
export { createManualClock } from './manual-clock';
export type { ManualClock } from './manual-clock';
export type { Dispose } from './listeners';

export { ERROR_CLASSES } from './error-class';
export type { ErrorClass, ErrorClassifier } from './error-class';
export { classifyError, isTimeoutError } from './classify';
export type { ClassifyOptions } from './classify';
export { markRetriable, markThrottling, markNonRetriable, readRetryMark } from './marks';

export { createRetryQuota, isRetryQuota, RETRY_QUOTA_DEFAULTS } from './retry-quota';
export type { RetryQuota, RetryQuotaOptions, RetryCostKind } from './retry-quota';
export { createRetryBudget, isRetryBudget, RETRY_BUDGET_DEFAULTS } from './retry-budget';
export type { RetryBudget, RetryBudgetOptions } from './retry-budget';
export {
  createCircuitBreaker,
  isCircuitBreaker,
  CIRCUIT_BREAKER_DEFAULTS,
} from './circuit-breaker';
export type {
  CircuitBreaker,
  CircuitBreakerOptions,
  CircuitPermit,
  CircuitState,
  CircuitStateChange,
  CircuitTrip,
  ConsecutiveFailuresTrip,
  FailureRatioTrip,
} from './circuit-breaker';

export { retryPolicy } from './retry-policy';
export type { RetryPolicy, RetryPolicyOptions } from './retry-policy';
export { RETRY_POLICY_DEFAULTS } from './retry-settings';
export type { RetrySettings } from './retry-settings';
export type {
  RetryDecision,
  RetryDecisionInput,
  GiveUpReason,
  DecisionGiveUpReason,
} from './decide';
export type { Attempt, AttemptContext, ExecuteOptions, RetryEvent, GiveUpEvent } from './execute';

export * from './errors';
