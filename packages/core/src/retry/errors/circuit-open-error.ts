import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link CircuitOpenError}. */
export const CIRCUIT_OPEN = 'CIRCUIT_OPEN';

/**
 * The circuit breaker is open (or half-open with its probe already out), so the call was
 * refused without running. `cause` is the last attempt's error when the breaker refused a
 * retry, absent when it refused the first attempt. Retriable after `retryAfterMs`.
 */
export class CircuitOpenError extends JustonceError {
  /** Milliseconds until the breaker lets a probe through (0 when a probe is already out). */
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number, attempts: number, cause?: unknown) {
    super(CIRCUIT_OPEN, `circuit open; retry after ${retryAfterMs} ms`, {
      retriable: true,
      cause,
      details: { retryAfterMs, attempts },
    });
    this.retryAfterMs = retryAfterMs;
  }
}

/** True when `value` is a {@link CircuitOpenError} from any copy of the package. */
export function isCircuitOpenError(value: unknown): value is CircuitOpenError {
  return hasErrorCode(value, CIRCUIT_OPEN);
}
