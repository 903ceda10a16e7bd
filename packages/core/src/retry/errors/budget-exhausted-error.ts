import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link RetryBudgetExhaustedError}. */
export const RETRY_BUDGET_EXHAUSTED = 'RETRY_BUDGET_EXHAUSTED';

/**
 * Retries in the budget's window already reached their share of successful calls. `cause` is
 * the last attempt's error. Retriable: the budget grows back as calls succeed and old retries
 * leave the window.
 */
export class RetryBudgetExhaustedError extends JustonceError {
  constructor(attempts: number, cause: unknown) {
    super(RETRY_BUDGET_EXHAUSTED, 'retry budget exhausted', {
      retriable: true,
      cause,
      details: { attempts },
    });
  }
}

/** True when `value` is a {@link RetryBudgetExhaustedError} from any copy of the package. */
export function isRetryBudgetExhaustedError(value: unknown): value is RetryBudgetExhaustedError {
  return hasErrorCode(value, RETRY_BUDGET_EXHAUSTED);
}
