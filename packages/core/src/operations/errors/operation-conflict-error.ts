import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link OperationConflictError}. */
export const OPERATION_CONFLICT = 'OPERATION_CONFLICT';

/**
 * The key was already used for a different request: the stored request hash does not match
 * the hash of this request. A key names one logical request, so this is a caller bug (or
 * abuse), never a retry. Not retriable.
 */
export class OperationConflictError extends JustonceError {
  /** Scope of the record. */
  readonly scope: string;
  /** Operation name of the record. */
  readonly operation: string;
  /** The idempotency key. */
  readonly key: string;

  constructor(scope: string, operation: string, key: string) {
    super(
      OPERATION_CONFLICT,
      `idempotency key "${key}" of operation "${operation}" was already used with a different request`,
      { retriable: false, details: { scope, operation, key } },
    );
    this.scope = scope;
    this.operation = operation;
    this.key = key;
  }
}

/** True when `value` is an {@link OperationConflictError} from any copy of the package. */
export function isOperationConflictError(value: unknown): value is OperationConflictError {
  return hasErrorCode(value, OPERATION_CONFLICT);
}
