/**
 * Whether an error is a fault of the store (or the way to it) rather than of the work that
 * met it. Such a fault is an outage: never a reason to count an attempt against a message,
 * dead-letter it, or mark an event dead.
 */

/** SQLSTATEs of an unhealthy server, whatever statement met them. */
const OUTAGE_SQLSTATES: ReadonlySet<string> = new Set([
  '53100', // disk_full
  '53200', // out_of_memory
  '53300', // too_many_connections
  '58030', // io_error
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '57P05', // idle_session_timeout: the server dropped the session
  '25006', // read_only_sql_transaction: a standby after a failover
]);

/** Socket and resolver codes of a connection that is gone or cannot be made. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Messages pg and knex give a dead connection, which carry no code. */
const DEAD_CONNECTION = [
  /^Connection terminated/,
  /Connection ended unexpectedly/,
  /is not queryable/,
  /^Transaction query already complete/,
  /^Timeout acquiring a connection/,
];

/**
 * True when `error`, or an error in its `cause` chain, is a store outage. With `handler`,
 * the error came out of user code, which may also call other services: a bare socket code
 * there may be that service's, so only the database's own signs count. @internal
 */
export function isStoreOutage(error: unknown, options: { handler?: boolean } = {}): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const e = current as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown };
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code !== undefined) {
      if (OUTAGE_SQLSTATES.has(code)) return true;
      if (NETWORK_CODES.has(code) && options.handler !== true) return true;
      if (/^08[0-9A-Z]{3}$/.test(code)) return true; // connection_exception class
    }
    if (e.name === 'KnexTimeoutError' || code === 'STORE_TIMEOUT') return true;
    if (
      typeof e.message === 'string' &&
      DEAD_CONNECTION.some((re) => re.test(e.message as string))
    ) {
      return true;
    }
    current = e.cause;
  }
  return false;
}
