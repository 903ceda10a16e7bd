import { JustonceError, hasErrorCode } from '@justonce/core';

/** Code of {@link StoredResponseError}. */
export const STORED_RESPONSE_UNREADABLE = 'STORED_RESPONSE_UNREADABLE';

/**
 * The operation record of a key holds a response this package did not write (another user
 * of the same operation name and scope wrote it through `operations.run`), so it cannot be
 * replayed as an HTTP response. Give each HTTP route an operation name of its own. Not
 * retriable.
 */
export class StoredResponseError extends JustonceError {
  constructor() {
    super(
      STORED_RESPONSE_UNREADABLE,
      'the stored response of this idempotency key is not an HTTP response written by @justonce/http; give the route an operation name of its own',
      { retriable: false },
    );
  }
}

/** True when `value` is a {@link StoredResponseError} from any copy of the package. */
export function isStoredResponseError(value: unknown): value is StoredResponseError {
  return hasErrorCode(value, STORED_RESPONSE_UNREADABLE);
}
