import { errorChain } from '../../errors/error-chain';
import { isStoreTimeoutError } from './store-timeout-error';

/** Node socket error codes of a connection that is gone or never came. */
const SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * SQLSTATEs of a server that shut the session down (restart, failover, admin kill), and
 * mysql2's codes for the same: a lost connection, a server shutting down, a killed session.
 */
const SHUTDOWN_STATES: ReadonlySet<string> = new Set([
  '57P01',
  '57P02',
  '57P03',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  'ER_CON_COUNT_ERROR',
  'ER_CANT_CONNECT_TO_SERVER',
]);

/**
 * Messages of `pg` and knex that mean the connection died under the call. knex reports a
 * statement on a transaction whose BEGIN or ROLLBACK already failed, which after a database
 * restart is one on a dead connection, as "Transaction query already complete".
 */
const LOSS_MESSAGES =
  /Connection terminated|Client was closed and is not queryable|Can't add new command when connection is in closed state|connection error and is not queryable|Transaction query already complete|timeout expired/i;

/**
 * True when `error` (or one of its causes) means the connection to the database was lost or
 * could not be made: a {@link StoreTimeoutError}, a socket error, a shutdown SQLSTATE or class
 * 08, or one of the driver's messages for it. For logging a failure as what it is; such a
 * failure is worth retrying on a new connection. `socketCodes: false` ignores bare socket
 * codes, for errors out of user code, which may be another service's. @internal
 */
export function isConnectionLoss(
  error: unknown,
  options: { readonly socketCodes?: boolean } = {},
): boolean {
  const socketCodes = options.socketCodes ?? true;
  for (const e of errorChain(error)) {
    if (isStoreTimeoutError(e)) return true;
    const { code, message } = e;
    if (typeof code === 'string') {
      if (
        (socketCodes && SOCKET_CODES.has(code)) ||
        SHUTDOWN_STATES.has(code) ||
        /^08[0-9A-Z]{3}$/.test(code)
      ) {
        return true;
      }
    }
    if (typeof message === 'string' && LOSS_MESSAGES.test(message)) return true;
  }
  return false;
}
