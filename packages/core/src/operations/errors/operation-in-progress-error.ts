import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link OperationInProgressError}. */
export const OPERATION_IN_PROGRESS = 'OPERATION_IN_PROGRESS';

/**
 * Another owner holds a live lease on the key and did not finish within the time this caller
 * was willing to wait. Retriable: try again later, with the same key and request.
 */
export class OperationInProgressError extends JustonceError {
  /** Scope of the record. */
  readonly scope: string;
  /** Operation name of the record. */
  readonly operation: string;
  /** The idempotency key. */
  readonly key: string;
  /** When the current owner's lease ends (database clock), if known. */
  readonly leaseUntil: Date | undefined;

  constructor(
    scope: string,
    operation: string,
    key: string,
    leaseUntil: Date | undefined,
    waitedMs: number,
  ) {
    super(
      OPERATION_IN_PROGRESS,
      `operation "${operation}" with key "${key}" is in progress elsewhere`,
      {
        retriable: true,
        details: { scope, operation, key, leaseUntil: leaseUntil?.toISOString(), waitedMs },
      },
    );
    this.scope = scope;
    this.operation = operation;
    this.key = key;
    this.leaseUntil = leaseUntil;
  }
}

/** True when `value` is an {@link OperationInProgressError} from any copy of the package. */
export function isOperationInProgressError(value: unknown): value is OperationInProgressError {
  return hasErrorCode(value, OPERATION_IN_PROGRESS);
}
