import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link OnceUnavailableError}. */
export const ONCE_UNAVAILABLE = 'ONCE_UNAVAILABLE';

/**
 * `ctx.once` cannot keep a record here: the handler runs without an identity to key it by (an
 * HTTP request without an `Idempotency-Key`), or the ledger's store is a PGlite whose only
 * connection the handler's own transaction holds (give the inbox a `ledger` on a second
 * store). Nothing ran. A programming or configuration error: not retriable.
 */
export class OnceUnavailableError extends JustonceError {
  constructor(reason: string, details: Record<string, unknown> = {}) {
    super(ONCE_UNAVAILABLE, `ctx.once is not available here: ${reason}`, {
      retriable: false,
      details,
    });
  }
}

/** True when `value` is an {@link OnceUnavailableError} from any copy of the package. */
export function isOnceUnavailableError(value: unknown): value is OnceUnavailableError {
  return hasErrorCode(value, ONCE_UNAVAILABLE);
}
