import { JustonceError, hasErrorCode } from '../../errors';
import type { StoredOperationError } from '../types';

/** Code of {@link OperationFailedError}. */
export const OPERATION_FAILED = 'OPERATION_FAILED';

/**
 * The operation already failed permanently (FAILED_FINAL) for this key; the stored failure is
 * replayed instead of running the effect again. Not retriable with the same key.
 */
export class OperationFailedError extends JustonceError {
  /** Scope of the record. */
  readonly scope: string;
  /** Operation name of the record. */
  readonly operation: string;
  /** The idempotency key. */
  readonly key: string;
  /** The failure as it was recorded. */
  readonly failure: StoredOperationError;

  constructor(scope: string, operation: string, key: string, failure: StoredOperationError) {
    super(
      OPERATION_FAILED,
      `operation "${operation}" with key "${key}" failed permanently: ${failure.message}`,
      { retriable: false, details: { scope, operation, key, failure } },
    );
    this.scope = scope;
    this.operation = operation;
    this.key = key;
    this.failure = failure;
  }
}

/** True when `value` is an {@link OperationFailedError} from any copy of the package. */
export function isOperationFailedError(value: unknown): value is OperationFailedError {
  return hasErrorCode(value, OPERATION_FAILED);
}
