/**
 * Whether an error is a fault of the store (or the way to it) rather than of the work that
 * met it. Such a fault is an outage: never a reason to count an attempt against a message,
 * dead-letter it, or mark an event dead.
 */
import { errorChain } from '../errors/error-chain';
import { isConnectionLoss } from './errors/connection-loss';

/** SQLSTATEs of an unhealthy server beyond a lost connection, whatever statement met them. */
const OUTAGE_SQLSTATES: ReadonlySet<string> = new Set([
  '53100', // disk_full
  '53200', // out_of_memory
  '53300', // too_many_connections
  '58030', // io_error
  '57P05', // idle_session_timeout: the server dropped the session
  '25006', // read_only_sql_transaction: a standby after a failover
  // MySQL and MariaDB (mysql2's codes): out of disk, memory or connections; read-only.
  'ER_DISK_FULL',
  'ER_OUTOFMEMORY',
  'ER_OUT_OF_RESOURCES',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_OPTION_PREVENTS_STATEMENT',
]);

/**
 * True when `error`, or an error in its `cause` chain, is a store outage: a lost or timed-out
 * connection (see {@link isConnectionLoss}), a pool that could not hand out a connection, or a
 * server that is out of disk, memory or connections, failing I/O or read-only. With
 * `handler`, the error came out of user code, which may also call other services: a bare
 * socket code there may be that service's, so only the database's own signs count. @internal
 */
export function isStoreOutage(error: unknown, options: { handler?: boolean } = {}): boolean {
  if (isConnectionLoss(error, { socketCodes: options.handler !== true })) return true;
  for (const e of errorChain(error)) {
    if (typeof e.code === 'string' && OUTAGE_SQLSTATES.has(e.code)) return true;
    if (e.name === 'KnexTimeoutError') return true;
    if (typeof e.message === 'string' && /^Timeout acquiring a connection/.test(e.message)) {
      return true;
    }
  }
  return false;
}

/** SQLSTATEs of a collision between transactions: running the transaction again may pass. */
const CONFLICT_SQLSTATES: ReadonlySet<string> = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  'ER_LOCK_DEADLOCK', // MySQL and MariaDB: a deadlock, the transaction rolled back
  'ER_LOCK_WAIT_TIMEOUT', // innodb_lock_wait_timeout: only the statement failed
]);

/**
 * True when `error`, or an error in its `cause` chain, is a deadlock or a serialization
 * failure: a collision with other transactions, not a fault of the server nor of the work
 * itself. Callers decide whether their own statements meeting one is an outage. @internal
 */
export function isTransactionConflict(error: unknown): boolean {
  for (const e of errorChain(error)) {
    if (typeof e.code === 'string' && CONFLICT_SQLSTATES.has(e.code)) return true;
  }
  return false;
}
