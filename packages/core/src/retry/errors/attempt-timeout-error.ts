import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link AttemptTimeoutError}. */
export const RETRY_ATTEMPT_TIMEOUT = 'RETRY_ATTEMPT_TIMEOUT';

/**
 * One attempt ran longer than the per-attempt timeout; its signal was aborted with this error.
 * Classified transient, and charged the higher timeout cost by the retry quota. When it is the
 * last attempt's error it becomes the `cause` of the error the policy finally throws.
 */
export class AttemptTimeoutError extends JustonceError {
  /** The 1-based attempt that timed out. */
  readonly attempt: number;
  /** The timeout it exceeded, in milliseconds. */
  readonly timeoutMs: number;

  constructor(attempt: number, timeoutMs: number) {
    super(RETRY_ATTEMPT_TIMEOUT, `attempt ${attempt} timed out after ${timeoutMs} ms`, {
      retriable: true,
      details: { attempt, timeoutMs },
    });
    this.attempt = attempt;
    this.timeoutMs = timeoutMs;
  }
}

/** True when `value` is an {@link AttemptTimeoutError} from any copy of the package. */
export function isAttemptTimeoutError(value: unknown): value is AttemptTimeoutError {
  return hasErrorCode(value, RETRY_ATTEMPT_TIMEOUT);
}
