import { JustonceError, hasErrorCode } from '../../errors';
import type { OperationStatus } from '../types';

/** Code of {@link LeaseLostError}. */
export const LEASE_LOST = 'LEASE_LOST';

/**
 * The caller no longer owns the record: its compare-and-set on `owner_id` matched nothing,
 * because the lease ran out and another owner took over, the record was already finalized,
 * or it expired and was removed. The stale owner's result is discarded. Not retriable by
 * this owner; the current owner (or a later retry) decides the outcome.
 */
export class LeaseLostError extends JustonceError {
  /** Scope of the record. */
  readonly scope: string;
  /** Operation name of the record. */
  readonly operation: string;
  /** The idempotency key. */
  readonly key: string;
  /** The owner id that lost the lease. */
  readonly ownerId: string;
  /** Who owns the record now, when it still exists and has an owner. */
  readonly currentOwnerId: string | undefined;
  /** The record's status now, or `undefined` when it no longer exists. */
  readonly currentStatus: OperationStatus | undefined;

  constructor(
    ref: { scope: string; operation: string; key: string; ownerId: string },
    current: { ownerId?: string | undefined; status?: OperationStatus | undefined },
    action: string,
  ) {
    super(
      LEASE_LOST,
      `cannot ${action} operation "${ref.operation}" with key "${ref.key}": owner ${ref.ownerId} no longer holds it`,
      {
        retriable: false,
        details: {
          scope: ref.scope,
          operation: ref.operation,
          key: ref.key,
          ownerId: ref.ownerId,
          currentOwnerId: current.ownerId,
          currentStatus: current.status,
          action,
        },
      },
    );
    this.scope = ref.scope;
    this.operation = ref.operation;
    this.key = ref.key;
    this.ownerId = ref.ownerId;
    this.currentOwnerId = current.ownerId;
    this.currentStatus = current.status;
  }
}

/** True when `value` is a {@link LeaseLostError} from any copy of the package. */
export function isLeaseLostError(value: unknown): value is LeaseLostError {
  return hasErrorCode(value, LEASE_LOST);
}
