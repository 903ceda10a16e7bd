import { errorMessage } from '../common/errors';
import { JustonceError } from './justonce-error';

/**
 * The store, not the message, failed: the database is unreachable, out of disk space,
 * shutting down, read-only after a failover, out of connections or memory, or a call ran
 * past its time limit. Nothing was committed for the message and no attempt was charged to
 * it: the transport must not acknowledge, and the redelivery runs it again once the store
 * answers. Retriable. `cause` is the driver's error.
 */
export class StoreUnavailableError extends JustonceError {
  constructor(cause: unknown, details: Record<string, unknown> = {}) {
    const text = errorMessage(cause);
    super('STORE_UNAVAILABLE', `the store is unavailable: ${text}`, {
      retriable: true,
      cause,
      details,
    });
  }
}
