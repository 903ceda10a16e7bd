/**
 * The knex a store runs on: opened from a URL (`pg` with the store's limits, or `mysql2`), on
 * an embedded or given PGlite, and which dialect a knex speaks. @internal
 */
import { inspect } from 'node:util';
import knexModule, { type Knex } from 'knex';
import { PGlite } from '@electric-sql/pglite';
import ClientPgLite from 'knex-pglite';
import { ConfigurationError } from '../errors';
import type { Logger } from '../observability/logger';
import type { StoreDialect } from './dialect';
import { guardKnex, pgConnectionConfig, type ResolvedStoreTimeouts } from './limits';
import { isMysqlKnex, isMysqlUrl, mysqlKnexConfig } from './mysql/connection';

// knex is CommonJS whose named exports Node's ESM loader cannot see; its default export
// (module.exports, the factory itself) works from both module systems.
const createKnex = knexModule;

/** Which database a knex talks to, from its client. @internal */
export function detectDialect(k: Knex): StoreDialect {
  if (isMysqlKnex(k)) return 'mysql';
  const client = (k.client as { config?: { client?: unknown } }).config?.client;
  const name = typeof client === 'string' ? client : (client as { name?: string })?.name;
  return typeof name === 'string' && /pglite/i.test(name) ? 'pglite' : 'postgres';
}

/** A knex on the PGlite dialect over `pglite` (a function, so knex does not copy it). */
export function pgliteKnex(pglite: PGlite): Knex {
  return createKnex({
    client: ClientPgLite as unknown as typeof Knex.Client,
    dialect: 'postgres',
    connection: () => ({ pglite }),
    useNullAsDefault: true,
  } as unknown as Knex.Config);
}

/**
 * `pglite` as knex's dialect sees it, minus `close`: knex closes its connections when it is
 * destroyed, and a PGlite the caller gave belongs to the caller. Methods are bound to the
 * instance itself, whose private fields a proxy as `this` could not reach.
 */
export function unclosable(pglite: PGlite): PGlite {
  return new Proxy(pglite, {
    get(target, property) {
      if (property === 'close') return async () => undefined;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function'
        ? (value as (...args: unknown[]) => unknown).bind(target)
        : value;
    },
  });
}

/**
 * Starts an embedded database and waits until it is ready. Waiting here rather than at the
 * first query keeps its start (seconds, more on a busy machine) out of knex's wait for a
 * connection, which would otherwise time out with a pool error; a data directory PGlite
 * cannot open is a ConfigurationError, not PGlite's own error.
 */
export async function startPglite(dataDir: string | undefined): Promise<PGlite> {
  const pglite = new PGlite(dataDir);
  try {
    await pglite.waitReady;
  } catch (error) {
    // PGlite rejects with plain objects too (`{ name: 'ErrnoError', errno: 54 }`).
    const cause =
      error instanceof Error ? error.message : inspect(error, { breakLength: Infinity });
    throw new ConfigurationError(
      `PGlite could not start${dataDir === undefined ? '' : ` in ${JSON.stringify(dataDir)}`}: ${cause}`,
      { dataDir },
    );
  }
  return pglite;
}

/**
 * The knex of a store opened from a URL: `mysql2` for a MySQL or MariaDB URL, else `pg` with
 * the client-side limits (see `limits.ts`).
 */
export function urlKnex(
  url: string,
  timeouts: ResolvedStoreTimeouts,
  keepAliveDelayMs: number | null,
  pool: { min: number; max: number },
  logger: Logger,
): Knex {
  // knex warns on stderr about each connection the limits destroyed and each failed
  // acquire, repeating what the store logs: its lines go to the store's logger instead.
  const log = {
    warn: (message: unknown) => logger.warn('store: knex', { message: String(message) }),
    error: (message: unknown) => logger.error('store: knex', { message: String(message) }),
    deprecate: (message: unknown) => logger.warn('store: knex', { message: String(message) }),
    debug: () => undefined,
  };
  if (isMysqlUrl(url)) {
    return createKnex({ ...mysqlKnexConfig(url, timeouts, keepAliveDelayMs, pool), log });
  }
  const knex = createKnex({
    client: 'pg',
    connection: pgConnectionConfig(url, timeouts, keepAliveDelayMs),
    pool,
    acquireConnectionTimeout: timeouts.acquireMs,
    log,
  } as Knex.Config);
  guardKnex(knex, timeouts, logger);
  return knex;
}
