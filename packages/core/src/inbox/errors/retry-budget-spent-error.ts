import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link RetryBudgetSpentError}, and the reason of the dead letter it leads to. */
export const RETRY_BUDGET_SPENT = 'RETRY_BUDGET_SPENT';

/**
 * A consumer's handler failed, its retry budget would not pay for the retry, and the
 * `resilience` option says `budget: { whenSpent: 'dead-letter' }`: final (`retriable` false),
 * so the inbox dead-letters the message at once with reason `RETRY_BUDGET_SPENT`. `cause` is
 * the handler's error.
 */
export class RetryBudgetSpentError extends JustonceError {
  /** Dead-letter reason the inbox records for this error. */
  readonly deadLetterReason = RETRY_BUDGET_SPENT;

  constructor(attempt: number, cause: unknown) {
    super(RETRY_BUDGET_SPENT, 'the retry budget is spent; dead-lettered as asked (whenSpent)', {
      retriable: false,
      cause,
      details: { attempt },
    });
  }
}

/** True when `value` is a {@link RetryBudgetSpentError} from any copy of the package. */
export function isRetryBudgetSpentError(value: unknown): value is RetryBudgetSpentError {
  return hasErrorCode(value, RETRY_BUDGET_SPENT);
}
