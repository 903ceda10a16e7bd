import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link RetryAttemptsExhaustedError}. */
export const RETRY_ATTEMPTS_EXHAUSTED = 'RETRY_ATTEMPTS_EXHAUSTED';

/**
 * Every attempt the policy allows failed with a retriable error. `cause` is the last error.
 * Retriable: the failure was transient, so a later delivery may succeed.
 */
export class RetryAttemptsExhaustedError extends JustonceError {
  /** How many attempts ran. */
  readonly attempts: number;

  constructor(attempts: number, cause: unknown, elapsedMs: number) {
    super(RETRY_ATTEMPTS_EXHAUSTED, `gave up after ${attempts} attempts`, {
      retriable: true,
      cause,
      details: { attempts, elapsedMs },
    });
    this.attempts = attempts;
  }
}

/** True when `value` is a {@link RetryAttemptsExhaustedError} from any copy of the package. */
export function isRetryAttemptsExhaustedError(
  value: unknown,
): value is RetryAttemptsExhaustedError {
  return hasErrorCode(value, RETRY_ATTEMPTS_EXHAUSTED);
}
