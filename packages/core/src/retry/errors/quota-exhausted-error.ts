import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link RetryQuotaExhaustedError}. */
export const RETRY_QUOTA_EXHAUSTED = 'RETRY_QUOTA_EXHAUSTED';

/**
 * The retry quota token bucket had too few tokens for another retry: many recent calls failed,
 * so retrying now would mostly add load. `cause` is the last attempt's error. Retriable: the
 * bucket refills as calls succeed.
 */
export class RetryQuotaExhaustedError extends JustonceError {
  /** Tokens left in the bucket when the retry was refused. */
  readonly available: number;

  constructor(attempts: number, available: number, cause: unknown) {
    super(RETRY_QUOTA_EXHAUSTED, `retry quota exhausted (${available} tokens left)`, {
      retriable: true,
      cause,
      details: { attempts, available },
    });
    this.available = available;
  }
}

/** True when `value` is a {@link RetryQuotaExhaustedError} from any copy of the package. */
export function isRetryQuotaExhaustedError(value: unknown): value is RetryQuotaExhaustedError {
  return hasErrorCode(value, RETRY_QUOTA_EXHAUSTED);
}
