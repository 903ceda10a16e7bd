import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link RetryDeadlineExceededError}. */
export const RETRY_DEADLINE_EXCEEDED = 'RETRY_DEADLINE_EXCEEDED';

/**
 * The total deadline ran out, or the next backoff would have crossed it. `cause` is the last
 * attempt's error. Retriable: the work itself may succeed later.
 */
export class RetryDeadlineExceededError extends JustonceError {
  /** The deadline that was exceeded, in milliseconds from the start of the call. */
  readonly deadlineMs: number;

  constructor(deadlineMs: number, attempts: number, cause: unknown, elapsedMs: number) {
    super(
      RETRY_DEADLINE_EXCEEDED,
      `deadline of ${deadlineMs} ms exceeded after ${attempts} attempts`,
      {
        retriable: true,
        cause,
        details: { deadlineMs, attempts, elapsedMs },
      },
    );
    this.deadlineMs = deadlineMs;
  }
}

/** True when `value` is a {@link RetryDeadlineExceededError} from any copy of the package. */
export function isRetryDeadlineExceededError(value: unknown): value is RetryDeadlineExceededError {
  return hasErrorCode(value, RETRY_DEADLINE_EXCEEDED);
}
