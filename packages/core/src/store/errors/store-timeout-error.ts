import { JustonceError, hasErrorCode } from '../../errors/justonce-error';

/**
 * Which time limit of the store fired. `liveness`: a statement waited `timeouts.livenessMs`
 * and the server then did not answer a check on a new connection within the same time.
 */
export type StoreTimeoutLimit = 'connect' | 'acquire' | 'query' | 'listen-check' | 'liveness';

/**
 * A call to the database ran into one of the store's time limits (see `createStore`'s
 * `timeouts`): the database did not answer in time, typically because the network to it is
 * partitioned or it is failing over. The connection the call was on has been destroyed, never
 * returned to the pool, so trying again (on a fresh connection) may succeed: `retriable` is
 * true. `cause` is the underlying error when there is one; `details.limit` names the limit
 * and `details.timeoutMs` its value.
 */
export class StoreTimeoutError extends JustonceError {
  /** The limit that fired. */
  readonly limit: StoreTimeoutLimit;
  /** Its value in milliseconds. */
  readonly timeoutMs: number;

  constructor(limit: StoreTimeoutLimit, timeoutMs: number, options: { cause?: unknown } = {}) {
    super('STORE_TIMEOUT', describe(limit, timeoutMs), {
      retriable: true,
      cause: options.cause,
      details: { limit, timeoutMs },
    });
    this.limit = limit;
    this.timeoutMs = timeoutMs;
  }
}

function describe(limit: StoreTimeoutLimit, ms: number): string {
  switch (limit) {
    case 'connect':
      return `the database did not accept a connection within ${ms} ms (timeouts.connectMs)`;
    case 'acquire':
      return `no database connection became free within ${ms} ms (timeouts.acquireMs)`;
    case 'query':
      return `the database did not answer within ${ms} ms (timeouts.queryMs); the connection was destroyed`;
    case 'listen-check':
      return `the notification connection did not answer a check within ${ms} ms; it was destroyed`;
    case 'liveness':
      return `the database did not answer a liveness check within ${ms} ms while the statement waited (timeouts.livenessMs); the connection was destroyed`;
  }
}

/** True when `value` is a {@link StoreTimeoutError} (from any copy of this package). */
export function isStoreTimeoutError(value: unknown): value is StoreTimeoutError {
  return hasErrorCode(value, 'STORE_TIMEOUT');
}
