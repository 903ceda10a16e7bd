import type { TransactionState } from '../transactions/types';

/** The members of a node-postgres `Client` the status is read from. */
interface PgClientStatus {
  getTransactionStatus(): string | null;
  readyForQuery?: unknown;
}

/** True for a node-postgres client (one that reports the server's transaction status). */
export function hasPgStatus(value: unknown): value is PgClientStatus {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { getTransactionStatus?: unknown }).getTransactionStatus === 'function'
  );
}

/**
 * The server's transaction status as a node-postgres client last heard it, or `undefined`
 * while a reply is pending: a failed statement rejects on the server's error, before the
 * status that follows it arrives (often in a later packet), so until then the old status is
 * stale. A client that never connected has no transaction. Used by every adapter whose
 * library runs on node-postgres. @internal
 */
export function pgClientState(client: PgClientStatus): TransactionState | undefined {
  try {
    const status = client.getTransactionStatus();
    if (status === null) return 'idle';
    if (client.readyForQuery === false) return undefined;
    return status === 'T' ? 'active' : status === 'E' ? 'failed' : 'idle';
  } catch {
    return undefined;
  }
}
