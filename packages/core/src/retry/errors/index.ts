export {
  RetryAttemptsExhaustedError,
  RETRY_ATTEMPTS_EXHAUSTED,
  isRetryAttemptsExhaustedError,
} from './attempts-exhausted-error';
export {
  RetryDeadlineExceededError,
  RETRY_DEADLINE_EXCEEDED,
  isRetryDeadlineExceededError,
} from './deadline-exceeded-error';
export {
  AttemptTimeoutError,
  RETRY_ATTEMPT_TIMEOUT,
  isAttemptTimeoutError,
} from './attempt-timeout-error';
export {
  RetryQuotaExhaustedError,
  RETRY_QUOTA_EXHAUSTED,
  isRetryQuotaExhaustedError,
} from './quota-exhausted-error';
export {
  RetryBudgetExhaustedError,
  RETRY_BUDGET_EXHAUSTED,
  isRetryBudgetExhaustedError,
} from './budget-exhausted-error';
export { CircuitOpenError, CIRCUIT_OPEN, isCircuitOpenError } from './circuit-open-error';
