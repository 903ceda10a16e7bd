import { isJustonceError } from '../errors';
import {
  AttemptTimeoutError,
  CircuitOpenError,
  RetryAttemptsExhaustedError,
  RetryBudgetExhaustedError,
  RetryDeadlineExceededError,
  RetryQuotaExhaustedError,
  isAttemptTimeoutError,
  isCircuitOpenError,
  isRetryAttemptsExhaustedError,
  isRetryBudgetExhaustedError,
  isRetryDeadlineExceededError,
  isRetryQuotaExhaustedError,
} from './errors';

describe('retry errors', () => {
  const last = new Error('last');
  const cases = [
    {
      error: new RetryAttemptsExhaustedError(3, last, 120),
      guard: isRetryAttemptsExhaustedError,
      code: 'RETRY_ATTEMPTS_EXHAUSTED',
    },
    {
      error: new RetryDeadlineExceededError(1_000, 2, last, 1_000),
      guard: isRetryDeadlineExceededError,
      code: 'RETRY_DEADLINE_EXCEEDED',
    },
    {
      error: new RetryQuotaExhaustedError(2, 3, last),
      guard: isRetryQuotaExhaustedError,
      code: 'RETRY_QUOTA_EXHAUSTED',
    },
    {
      error: new RetryBudgetExhaustedError(2, last),
      guard: isRetryBudgetExhaustedError,
      code: 'RETRY_BUDGET_EXHAUSTED',
    },
    {
      error: new CircuitOpenError(500, 1, last),
      guard: isCircuitOpenError,
      code: 'CIRCUIT_OPEN',
    },
  ];

  it.each(cases)('$code carries a code, the retriable flag and the last error', (c) => {
    expect(c.error.code).toBe(c.code);
    expect(c.error.retriable).toBe(true);
    expect(c.error.cause).toBe(last);
    expect(c.error.name).toBe(c.error.constructor.name);
    expect(isJustonceError(c.error)).toBe(true);
    expect(c.guard(c.error)).toBe(true);
    expect(c.guard(new Error(c.code))).toBe(false);
  });

  it('guards check the marker and code, not the class, so a copy from another bundle passes', () => {
    const foreign = Object.assign(new Error('x'), {
      [Symbol.for('@justonce/core/error')]: true,
      code: 'CIRCUIT_OPEN',
    });
    expect(isCircuitOpenError(foreign)).toBe(true);
    expect(isRetryQuotaExhaustedError(foreign)).toBe(false);
  });

  it('AttemptTimeoutError names its attempt and timeout', () => {
    const timeout = new AttemptTimeoutError(2, 750);
    expect(timeout).toMatchObject({ code: 'RETRY_ATTEMPT_TIMEOUT', attempt: 2, timeoutMs: 750 });
    expect(timeout.retriable).toBe(true);
    expect(timeout.message).toBe('attempt 2 timed out after 750 ms');
    expect(isAttemptTimeoutError(timeout)).toBe(true);
  });

  it('exposes the numbers callers act on', () => {
    expect(new CircuitOpenError(1_234, 0).retryAfterMs).toBe(1_234);
    expect(new CircuitOpenError(1_234, 0).cause).toBeUndefined();
    expect(new RetryQuotaExhaustedError(2, 3, last).available).toBe(3);
    expect(new RetryAttemptsExhaustedError(4, last, 0).attempts).toBe(4);
    expect(new RetryDeadlineExceededError(900, 1, last, 950).details).toEqual({
      deadlineMs: 900,
      attempts: 1,
      elapsedMs: 950,
    });
  });
});
