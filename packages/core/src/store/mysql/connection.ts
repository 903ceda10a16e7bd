import type { Knex } from 'knex';
import type { ResolvedStoreTimeouts } from '../limits';

/** True for a MySQL or MariaDB connection string (`mysql://` or `mariadb://`). @internal */
export function isMysqlUrl(connectionString: string): boolean {
  return /^(mysql|mariadb):\/\//i.test(connectionString);
}

export { isMysqlKnex } from '../../transactions/knex-dialect';

interface SessionConnection {
  query(sql: string, callback: (error: Error | null) => void): void;
  /** mysql2's record of the server's greeting, which names MariaDB in its version. */
  _handshakePacket?: { serverVersion?: string } | null;
}

/**
 * The session every connection starts with, so statements behave as on PostgreSQL:
 * - UTC, so `datetime(6)` columns and `current_timestamp(6)` hold UTC instants;
 * - READ COMMITTED, PostgreSQL's default, which the inbox's and the relay's statements assume
 *   (a locking read then sees the latest committed row, and InnoDB takes no gap locks on
 *   the dedup and outbox tables, which REPEATABLE READ would for every miss);
 * - the server's statement limit (`max_statement_time` in seconds on MariaDB,
 *   `max_execution_time` in milliseconds, for reads only, on MySQL) and MariaDB's
 *   `idle_transaction_timeout`.
 */
export function sessionStatements(
  limits: ResolvedStoreTimeouts,
  serverVersion: string | undefined,
): string[] {
  const mariadb = /mariadb/i.test(serverVersion ?? '');
  const statements = [
    "set session time_zone = '+00:00'",
    'set session transaction isolation level read committed',
  ];
  if (limits.statementMs > 0) {
    statements.push(
      mariadb
        ? `set session max_statement_time = ${limits.statementMs / 1000}`
        : `set session max_execution_time = ${Math.ceil(limits.statementMs)}`,
    );
  }
  if (mariadb && limits.idleInTransactionMs > 0) {
    statements.push(
      `set session idle_transaction_timeout = ${Math.ceil(limits.idleInTransactionMs / 1000)}`,
    );
  }
  return statements;
}

function runAll(
  connection: SessionConnection,
  statements: string[],
  done: (e: Error | null) => void,
): void {
  const [first, ...rest] = statements;
  if (first === undefined) return done(null);
  connection.query(first, (error) => (error ? done(error) : runAll(connection, rest, done)));
}

/**
 * The knex settings for a store opened from a MySQL or MariaDB URL: `mysql2` with UTC dates,
 * 64-bit integers as strings (as `pg` returns them), and the session above. @internal
 */
export function mysqlKnexConfig(
  connectionString: string,
  limits: ResolvedStoreTimeouts,
  keepAliveDelayMs: number | null,
  pool: { min: number; max: number },
): Knex.Config {
  return {
    client: 'mysql2',
    connection: {
      uri: connectionString,
      timezone: 'Z',
      charset: 'utf8mb4',
      supportBigNumbers: true,
      bigNumberStrings: true,
      dateStrings: false,
      connectTimeout: limits.connectMs > 0 ? limits.connectMs : undefined,
      enableKeepAlive: keepAliveDelayMs !== null,
      keepAliveInitialDelay: keepAliveDelayMs ?? 0,
    } as Knex.MySql2ConnectionConfig,
    pool: {
      ...pool,
      afterCreate: (connection: SessionConnection, done: (e: Error | null, c: unknown) => void) =>
        runAll(
          connection,
          sessionStatements(limits, connection._handshakePacket?.serverVersion),
          (error) => done(error, connection),
        ),
    },
    acquireConnectionTimeout: limits.acquireMs,
  };
}
