import { errorMessage } from '../common/errors';
import type { Knex } from 'knex';
import { integerOption, optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import type { Logger } from '../observability/logger';
import { StoreTimeoutError } from './errors/store-timeout-error';
import { createLiveness, fromServer, type Liveness, type ProbeClient } from './liveness';

/**
 * Time limits on the connections a store opens from a `connectionString`. Every value is in
 * milliseconds; `0` turns a limit off (except `acquireMs`). See docs/failure-modes.md.
 */
export interface StoreTimeouts {
  /** Connecting, TLS and authentication included (`pg`'s `connectionTimeoutMillis`). Default 10 000. */
  connectMs?: number;
  /** Server-side `statement_timeout` set on each connection at startup. Default 30 000. */
  statementMs?: number;
  /**
   * Client-side bound on one statement, queueing on its connection included. When it fires
   * the connection is destroyed (never returned to the pool) and the call throws
   * {@link StoreTimeoutError}. Above `statementMs`, so a slow but reachable server answers
   * with its own statement timeout first. Default 35 000.
   */
  queryMs?: number;
  /** Server-side `idle_in_transaction_session_timeout` on each connection. Default 60 000. */
  idleInTransactionMs?: number;
  /** Longest wait for a pooled connection (knex's `acquireConnectionTimeout`). Default 15 000. */
  acquireMs?: number;
  /**
   * Every how long the relay checks its LISTEN connection with `select 1`, which must answer
   * within the same time: a dead connection is noticed within twice this. Default 5 000.
   */
  listenCheckMs?: number;
  /**
   * How long a statement may wait for its answer before the store checks, with `select 1` on
   * a new connection of its own that must answer within the same time, that the server still
   * answers. If it does not, every connection with a statement in flight is destroyed and
   * those calls throw {@link StoreTimeoutError} (`limit: 'liveness'`): a partition is noticed
   * within about twice this, while a long statement on a server that answers runs on (up to
   * `statementMs` and `queryMs`). No check runs while no statement waits this long. Default
   * 5 000.
   */
  livenessMs?: number;
}

/** TCP keepalive on the store's connections: on, off, or on after `initialDelayMs` idle. */
export type StoreKeepAlive = boolean | { initialDelayMs?: number };

/** The limits in force, every one resolved. */
export type ResolvedStoreTimeouts = Readonly<Required<StoreTimeouts>>;

/** The defaults; docs/failure-modes.md says why each. @internal */
export const DEFAULT_TIMEOUTS: ResolvedStoreTimeouts = {
  connectMs: 10_000,
  statementMs: 30_000,
  queryMs: 35_000,
  idleInTransactionMs: 60_000,
  acquireMs: 15_000,
  listenCheckMs: 5_000,
  livenessMs: 5_000,
};

/** Default idle time before the first keepalive probe. @internal */
export const DEFAULT_KEEPALIVE_DELAY_MS = 10_000;

/** PostgreSQL's integer settings and Node's timers both stop at 2^31 - 1. */
const MAX_MS = 2_147_483_647;

const TIMEOUT_KEYS = optionKeys<StoreTimeouts>()([
  'connectMs',
  'statementMs',
  'queryMs',
  'idleInTransactionMs',
  'acquireMs',
  'listenCheckMs',
  'livenessMs',
]);
const KEEPALIVE_KEYS = optionKeys<Exclude<StoreKeepAlive, boolean>>()(['initialDelayMs']);

/** Validates `timeouts` and fills in the defaults. @internal */
export function resolveTimeouts(value: StoreTimeouts | undefined): ResolvedStoreTimeouts {
  if (value !== undefined && (typeof value !== 'object' || value === null)) {
    throw new ConfigurationError('timeouts must be an object', { timeouts: value });
  }
  rejectUnknownOptions(value, TIMEOUT_KEYS, 'createStore', 'timeouts');
  const given = value ?? {};
  const ms = (key: keyof StoreTimeouts, min: number): number =>
    integerOption(given[key], `timeouts.${key}`, DEFAULT_TIMEOUTS[key], min, MAX_MS);
  return {
    connectMs: ms('connectMs', 0),
    statementMs: ms('statementMs', 0),
    queryMs: ms('queryMs', 0),
    idleInTransactionMs: ms('idleInTransactionMs', 0),
    acquireMs: ms('acquireMs', 1),
    listenCheckMs: ms('listenCheckMs', 0),
    livenessMs: ms('livenessMs', 0),
  };
}

/** Validates `keepAlive`: the idle delay before probes, or `null` for off. @internal */
export function resolveKeepAlive(value: StoreKeepAlive | undefined): number | null {
  if (value === undefined || value === true) return DEFAULT_KEEPALIVE_DELAY_MS;
  if (value === false) return null;
  if (typeof value !== 'object' || value === null) {
    throw new ConfigurationError('keepAlive must be a boolean or { initialDelayMs }', {
      keepAlive: value,
    });
  }
  rejectUnknownOptions(value, KEEPALIVE_KEYS, 'createStore', 'keepAlive');
  return integerOption(
    value.initialDelayMs,
    'keepAlive.initialDelayMs',
    DEFAULT_KEEPALIVE_DELAY_MS,
    0,
    MAX_MS,
  );
}

/**
 * The `pg` client settings for the limits: connect timeout, keepalive and the server-side
 * timeouts, sent in the startup packet so that they hold from the first statement. Settings
 * in the connection string's query win over these (pg reads the URL last). @internal
 */
export function pgConnectionConfig(
  connectionString: string,
  limits: ResolvedStoreTimeouts,
  keepAliveDelayMs: number | null,
): Record<string, unknown> {
  return {
    connectionString,
    connectionTimeoutMillis: limits.connectMs,
    keepAlive: keepAliveDelayMs !== null,
    keepAliveInitialDelayMillis: keepAliveDelayMs ?? 0,
    ...(limits.statementMs > 0 ? { statement_timeout: limits.statementMs } : {}),
    ...(limits.idleInTransactionMs > 0
      ? { idle_in_transaction_session_timeout: limits.idleInTransactionMs }
      : {}),
  };
}

/** What the guard needs of a `pg` client. */
interface PgClientLike {
  query(...args: unknown[]): unknown;
  connection?: { stream?: { destroy(error?: Error): void } };
  /** knex's mark of a connection it must not hand out again. */
  __knex__disposed?: unknown;
}

/** Marks a connection destroyed by a limit, with the error its later calls fail with. */
const TIMED_OUT = Symbol('justonce.timedOut');
type Guarded = PgClientLike & { [TIMED_OUT]?: StoreTimeoutError };

/**
 * Destroys a `pg` connection's socket at once, failing every call on it with `error`, and
 * marks it for knex's pool, which then drops it instead of handing it out again. Ending it
 * politely would wait for a server that does not answer. @internal
 */
export function destroyConnection(connection: unknown, error: StoreTimeoutError): void {
  const client = connection as Guarded;
  client[TIMED_OUT] ??= error;
  client.__knex__disposed ??= error;
  client.connection?.stream?.destroy(error);
}

type Callback = (error: Error | null, result?: unknown) => void;

/**
 * Bounds every `query` on a `pg` client by `queryMs` (a per-query `query_timeout` overrides
 * it; `0` means none), and tells `liveness` of each statement in flight, bounded or not.
 * `pg`'s own `query_timeout` only rejects the promise: the socket stays open with the query
 * still active on it, later queries queue behind it, and a retry's BEGIN can land in the
 * abandoned transaction. Here the timer destroys the connection instead. A query on a
 * connection already destroyed so fails at once with the same error (knex's ROLLBACK after
 * the failure included, so the transaction rejects with it too). @internal
 */
export function guardQueries(
  connection: unknown,
  queryMs: number,
  onTimeout: (error: StoreTimeoutError) => void,
  liveness?: Liveness,
): void {
  const client = connection as Guarded;
  const original = client.query.bind(client);
  client.query = (config: unknown, values?: unknown, callback?: unknown): unknown => {
    // A submittable (pg-cursor, a Query object) manages its own callbacks; justonce uses none.
    if (typeof (config as { submit?: unknown } | null)?.submit === 'function') {
      return original(config, values, callback);
    }
    let ms = queryMs;
    let settings = config;
    if (typeof config === 'object' && config !== null && 'query_timeout' in config) {
      const { query_timeout: own, ...rest } = config as { query_timeout?: unknown };
      ms = typeof own === 'number' && own > 0 ? own : 0;
      settings = rest;
    }
    const cb = (typeof values === 'function' ? values : callback) as Callback | undefined;
    const dead = client[TIMED_OUT];
    if (dead !== undefined) {
      if (cb) {
        process.nextTick(() => cb(dead));
        return undefined;
      }
      return Promise.reject(dead);
    }
    if (!(ms > 0) && liveness === undefined) return original(settings, values, callback);
    const timer =
      ms > 0
        ? setTimeout(() => {
            const error = new StoreTimeoutError('query', ms);
            destroyConnection(client, error);
            onTimeout(error);
          }, ms)
        : undefined;
    const settle = liveness?.begin(client);
    const finish = (error: Error | null | undefined): void => {
      clearTimeout(timer);
      settle?.(error == null || fromServer(error));
    };
    try {
      if (cb) {
        const done: Callback = (error, result) => {
          finish(error);
          cb(error, result);
        };
        return typeof values === 'function'
          ? original(settings, done)
          : original(settings, values, done);
      }
      const result = original(settings, values) as Promise<unknown>;
      result.then(
        () => finish(null),
        (error: Error) => finish(error),
      );
      return result;
    } catch (error) {
      // Never sent: neither the timer nor the liveness check may wait for it.
      finish(error as Error);
      throw error;
    }
  };
}

/** What the guard patches on knex's `pg` dialect client. */
interface PgKnexClient {
  _acquireOnlyConnection(): Promise<unknown>;
  acquireConnection(): Promise<unknown>;
  /** The `pg` module and the settings knex opens its connections with. */
  driver: { Client: new (settings: unknown) => ProbeClient };
  connectionSettings: unknown;
}

/** `pg`'s errors when `connectionTimeoutMillis` fires. */
const CONNECT_TIMEOUT = /timeout expired|connection timeout/i;

/**
 * Applies the client-side limits to a knex on the `pg` client the store created: every new
 * connection (the pool's and the relay's dedicated LISTEN connection alike, which knex opens
 * through the same method) gets {@link guardQueries} before knex runs its first statement on
 * it, statements that wait longer than `livenessMs` start the liveness check (see
 * `liveness.ts`), and connect and acquire timeouts become {@link StoreTimeoutError}s. @internal
 */
export function guardKnex(knex: Knex, limits: ResolvedStoreTimeouts, logger: Logger): void {
  const client = knex.client as unknown as PgKnexClient;
  const connectOnly = client._acquireOnlyConnection.bind(client);
  const acquire = client.acquireConnection.bind(client);
  const onTimeout = (error: StoreTimeoutError): void => {
    logger.warn('store: database did not answer in time; connection destroyed', {
      limit: error.limit,
      timeoutMs: error.timeoutMs,
    });
  };
  const liveness = createLiveness({
    livenessMs: limits.livenessMs,
    // Outside the pool and unguarded: the check keeps its own time and is never checked itself.
    client: () => new client.driver.Client(client.connectionSettings),
    destroy: destroyConnection,
    logger,
  });
  client._acquireOnlyConnection = async () => {
    const started = performance.now();
    let connection: unknown;
    try {
      connection = await connectOnly();
    } catch (error) {
      const message = errorMessage(error);
      const late = limits.connectMs > 0 && performance.now() - started >= limits.connectMs - 50;
      if (limits.connectMs > 0 && (CONNECT_TIMEOUT.test(message) || late)) {
        const timeout = new StoreTimeoutError('connect', limits.connectMs, { cause: error });
        logger.warn('store: connecting to the database timed out', {
          timeoutMs: limits.connectMs,
          error: message,
        });
        throw timeout;
      }
      throw error;
    }
    guardQueries(connection, limits.queryMs, onTimeout, liveness);
    return connection;
  };
  client.acquireConnection = async () => {
    try {
      return await acquire();
    } catch (error) {
      if ((error as { name?: unknown } | null)?.name === 'KnexTimeoutError') {
        throw new StoreTimeoutError('acquire', limits.acquireMs, { cause: error });
      }
      throw error;
    }
  };
}
