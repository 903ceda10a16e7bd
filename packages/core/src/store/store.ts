import type { Knex } from 'knex';
import { PGlite } from '@electric-sql/pglite';
import { integerOption, optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import { resolveLogger, type Logger } from '../observability/logger';
import {
  resolveKeepAlive,
  resolveTimeouts,
  type ResolvedStoreTimeouts,
  type StoreKeepAlive,
  type StoreTimeouts,
} from './limits';
import { knexTableOnMysql, migrate, type MigrationResult } from './migrate';
import type { MigrationNames } from './migration';
import { resolveKnexMigrationsTable, type KnexMigrationsTable } from './migration-knex-table';
import {
  resolveLayout,
  resolvePartitions,
  type ResolvedStorePartitions,
  type StoreLayout,
  type StorePartitions,
} from './layout';
import { makeDistributable, resolveDistribution, type StoreDistribution } from './distribution';
import { convertToPartitioned } from './partitions/convert';
import { maintainPartitions } from './partitions/maintain';
import { PARTITIONED_TABLES } from './partitions/tables';
import { migrateMysql } from './mysql/migrate';
import type { StoreDialect } from './dialect';
import { createNames } from './names';
import { detectDialect, pgliteKnex, startPglite, unclosable, urlKnex } from './database';

export type { StoreDialect } from './dialect';
export { createNames } from './names';

/** How to reach the database. Give exactly one of `knex`, `connectionString` or `pglite`. */
export interface StoreOptions {
  /**
   * A knex instance you own, on the `pg` client or the PGlite dialect. The store never
   * destroys it. Its dialect is detected from the client.
   */
  knex?: Knex;
  /** A PostgreSQL connection string; the store creates and owns a `pg` pool. */
  connectionString?: string;
  /**
   * Embedded PGlite. `dataDir` is a directory for a durable database, or omitted for an
   * in-memory one. This is the default when nothing else is given. `instance` is a PGlite
   * you own instead (the one your Drizzle runs on, so the inbox writes in its transactions);
   * the store never closes it.
   */
  pglite?: { dataDir?: string; instance?: PGlite };
  /** Pool size for `connectionString`. Default `{ min: 0, max: 10 }`. */
  pool?: { min?: number; max?: number };
  /** Schema holding justonce's tables. Default `justonce`. Validated: `[a-z_][a-z0-9_]*`. */
  schema?: string;
  /** Prefix for every table name. Default empty. Validated like `schema`. */
  tablePrefix?: string;
  /**
   * Run the hot statements of fixed text (the relay's, an operation's reserve and
   * completion) as named prepared statements on PostgreSQL, so each
   * connection parses them once and PostgreSQL can reuse their plans. Default `true`. Set
   * `false` when the connections go through a pooler that hands a session's statements to
   * other clients (PgBouncer in transaction mode before 1.21, or without
   * `max_prepared_statements`). Ignored on PGlite.
   */
  preparedStatements?: boolean;
  /**
   * Time limits on the connections opened from `connectionString`: connect, acquire, the
   * server's statement and idle-in-transaction timeouts, a client-side bound on each
   * statement after which the connection is destroyed and the call throws
   * {@link StoreTimeoutError} (retriable), and the liveness check that a statement waiting
   * `livenessMs` starts, which destroys the connections in flight when the server does not
   * answer it. Defaults `{ connectMs: 10 000, statementMs: 30 000, queryMs: 35 000,
   * idleInTransactionMs: 60 000, acquireMs: 15 000, listenCheckMs: 5 000, livenessMs: 5 000 }`.
   * Only `listenCheckMs` applies to a `knex` you pass (configure its pool yourself); none
   * applies to PGlite, which runs in process. See docs/failure-modes.md.
   */
  timeouts?: StoreTimeouts;
  /**
   * TCP keepalive on the connections opened from `connectionString`, so that an idle
   * connection to a vanished host is noticed. Default on, first probe after 10 000 ms idle.
   */
  keepAlive?: StoreKeepAlive;
  /** Where the store logs a time limit that fired. Default: silent. */
  logger?: Logger;
  /**
   * Knex's migrations table, when justonce's migrations run through knex's migrator
   * ({@link createKnexMigrationSource}): `tableName`, or `schemaName.tableName`. Its records
   * count as applied for {@link migrationStatus}, and `migrate()` leaves a schema it records
   * to knex. Default: knex's default table, `knex_migrations`, if it exists; `false`: none.
   */
  knexMigrationsTable?: KnexMigrationsTable;
  /**
   * How `migrate()` lays out the inbox's dedup records and the outbox: `'plain'` (default),
   * one table each, or `'partitioned'`, each range-partitioned by `created_at` (partitions
   * created ahead by `migrate()` and the retention job, retention by dropping whole
   * partitions). `migrate()` converts a plain table, live, into the partitioned layout; it
   * never converts back. See docs/store.md, "Partitioned layout".
   */
  layout?: StoreLayout;
  /** The partitions of the `'partitioned'` layout: interval, how many ahead, lock wait. */
  partitions?: StorePartitions;
  /**
   * `'distributable'`: `migrate()` gives every table a primary and unique key that includes
   * the column a distributed PostgreSQL (Citus) would shard it by, converting a plain schema
   * in one transaction; the outbox's message ids are then unique per shard key. `'none'`
   * (default): the schema as it is. Not with `layout: 'partitioned'`. Every process that
   * writes to the outbox must then run with it. See docs/scaling.md.
   */
  distribution?: StoreDistribution;
}

/**
 * The database justonce keeps its records in: a knex instance plus the validated names of
 * its tables. Inbox, operations, outbox and relay all take a store.
 */
export interface Store {
  /** The knex instance; pass `store.knex.transaction(...)` results to the APIs. */
  readonly knex: Knex;
  /** The PGlite database, on PGlite opened by the store or given to it; else `undefined`. */
  readonly pglite?: PGlite;
  readonly dialect: StoreDialect;
  /** The validated, unquoted schema name. */
  readonly schema: string;
  /** The validated, unquoted table prefix. */
  readonly tablePrefix: string;
  /** Quoted, qualified, prefixed names for SQL. */
  readonly names: MigrationNames;
  /** Whether hot statements run as named prepared statements (PostgreSQL only). */
  readonly preparedStatements: boolean;
  /** Knex's migrations table as given ({@link StoreOptions.knexMigrationsTable}). */
  readonly knexMigrationsTable?: KnexMigrationsTable;
  /**
   * The time limits in force: all of them for a store opened from a `connectionString`;
   * only `listenCheckMs` is used otherwise (see {@link StoreOptions.timeouts}).
   */
  readonly timeouts?: ResolvedStoreTimeouts;
  /** The layout `migrate()` gives `inbox_records` and `outbox` ({@link StoreOptions.layout}). */
  readonly layout: StoreLayout;
  /** The partition settings, defaults applied ({@link StoreOptions.partitions}). */
  readonly partitions: ResolvedStorePartitions;
  /** Whether the schema's keys carry their distribution column ({@link StoreOptions.distribution}). */
  readonly distribution: StoreDistribution;
  /**
   * Creates or upgrades justonce's tables; safe to call from several processes at once. A
   * schema that knex's migrator records is left to it: nothing to do, or a
   * {@link ConfigurationError} when migrations are pending (see docs/store.md). With
   * `layout: 'partitioned'` it then converts a plain `inbox_records` and `outbox` while
   * writers run, and creates the partitions ahead.
   */
  migrate(): Promise<MigrationResult>;
  /** Releases connections the store opened itself; a knex you passed in is left alone. */
  close(): Promise<void>;
}

/** Every option {@link createStore} knows, and those of its nested objects. */
const STORE_KEYS = optionKeys<StoreOptions>()([
  'knex',
  'connectionString',
  'pglite',
  'pool',
  'schema',
  'tablePrefix',
  'preparedStatements',
  'timeouts',
  'keepAlive',
  'logger',
  'knexMigrationsTable',
  'layout',
  'partitions',
  'distribution',
]);
const PGLITE_KEYS = optionKeys<NonNullable<StoreOptions['pglite']>>()(['dataDir', 'instance']);
const POOL_KEYS = optionKeys<NonNullable<StoreOptions['pool']>>()(['min', 'max']);

/**
 * Validates `pool` and fills in the defaults, so that a bad size is a
 * {@link ConfigurationError} rather than an error from knex's pool (tarn). @internal
 */
function resolvePool(value: StoreOptions['pool']): { min: number; max: number } {
  if (value !== undefined && (typeof value !== 'object' || value === null)) {
    throw new ConfigurationError('pool must be an object', { pool: value });
  }
  const max = integerOption(value?.max, 'pool.max', 10, 1, Number.MAX_SAFE_INTEGER);
  const min = integerOption(value?.min, 'pool.min', 0, 0, max);
  return { min, max };
}

/**
 * Opens a store. With no connection option it runs on an in-memory PGlite database, so the
 * library works with no server at all.
 */
export async function createStore(options: StoreOptions = {}): Promise<Store> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('createStore takes an options object');
  }
  // A misspelt connection option would otherwise leave none given, and the store would
  // quietly open an empty in-memory database instead of the one meant.
  rejectUnknownOptions(options, STORE_KEYS, 'createStore');
  rejectUnknownOptions(options.pglite, PGLITE_KEYS, 'createStore', 'pglite');
  rejectUnknownOptions(options.pool, POOL_KEYS, 'createStore', 'pool');
  const given = ['knex', 'connectionString', 'pglite'].filter(
    (k) => options[k as keyof StoreOptions] !== undefined,
  );
  if (given.length > 1) {
    throw new ConfigurationError(
      `give only one of knex, connectionString, pglite; got ${given.join(', ')}`,
    );
  }
  const schema = options.schema ?? 'justonce';
  const tablePrefix = options.tablePrefix ?? '';
  const checked = createNames(schema, tablePrefix);
  const prepared = options.preparedStatements ?? true;
  if (typeof prepared !== 'boolean') {
    throw new ConfigurationError('preparedStatements must be a boolean', {
      preparedStatements: prepared,
    });
  }
  const timeouts = resolveTimeouts(options.timeouts);
  const keepAliveDelayMs = resolveKeepAlive(options.keepAlive);
  const logger = resolveLogger(options.logger);
  const pool = resolvePool(options.pool);
  const { knexMigrationsTable } = options;
  resolveKnexMigrationsTable(knexMigrationsTable);
  const layout = resolveLayout(options.layout);
  const partitions = resolvePartitions(options.partitions);
  const distribution = resolveDistribution(options.distribution);
  if (distribution === 'distributable' && layout === 'partitioned') {
    // The partitioned layout keeps the inbox's records unique with a trigger and advisory
    // locks, neither of which a distributed table can rely on (docs/scaling.md).
    throw new ConfigurationError(
      `distribution 'distributable' cannot be combined with layout 'partitioned'`,
      { distribution, layout },
    );
  }
  // The layout's longest name, so that a prefix too long for it is refused here, not by a
  // conversion half-way.
  if (layout === 'partitioned') checked.raw('inbox_records_plain_succeeded_created_idx');

  let knex: Knex;
  let owned = true;
  /** The embedded database this store created, if it did. */
  let embedded: PGlite | undefined;
  /** The caller's PGlite, when given: knex's pool must not close it. */
  let shared: PGlite | undefined;
  if (options.knex) {
    knex = options.knex;
    owned = false;
  } else if (options.connectionString !== undefined) {
    if (typeof options.connectionString !== 'string' || options.connectionString === '') {
      throw new ConfigurationError('connectionString must be a non-empty string');
    }
    knex = urlKnex(options.connectionString, timeouts, keepAliveDelayMs, pool, logger);
  } else if (options.pglite?.instance !== undefined) {
    const { instance } = options.pglite;
    if (!(instance instanceof PGlite) || options.pglite.dataDir !== undefined) {
      throw new ConfigurationError('pglite.instance must be a PGlite, given without dataDir');
    }
    shared = instance;
    knex = pgliteKnex(unclosable(instance));
  } else {
    embedded = await startPglite(options.pglite?.dataDir);
    knex = pgliteKnex(embedded);
  }
  const dialect = detectDialect(knex);
  if (dialect === 'mysql') {
    const refused =
      knexMigrationsTable !== undefined
        ? knexTableOnMysql()
        : layout === 'partitioned' || distribution !== 'none'
          ? new ConfigurationError(
              `layout 'partitioned' and distribution 'distributable' are PostgreSQL's; MySQL and MariaDB keep the plain schema`,
              { layout, distribution },
            )
          : undefined;
    if (refused !== undefined) {
      if (owned) await knex.destroy();
      throw refused;
    }
  }
  const names = dialect === 'mysql' ? createNames(schema, tablePrefix, 'mysql') : checked;

  const migrateStore = async (): Promise<MigrationResult> => {
    if (dialect === 'mysql') return migrateMysql(knex, names);
    const result = await migrate(knex, names, undefined, { knexMigrationsTable });
    if (distribution === 'distributable') await makeDistributable(knex, names);
    if (layout === 'partitioned') {
      for (const spec of PARTITIONED_TABLES) {
        await convertToPartitioned({ knex, names, dialect, partitions }, spec);
        await maintainPartitions(knex, names, spec, partitions);
      }
    }
    return result;
  };

  return {
    knex,
    pglite: embedded ?? shared,
    dialect,
    schema,
    tablePrefix,
    names,
    preparedStatements: prepared && dialect === 'postgres',
    timeouts,
    knexMigrationsTable,
    layout,
    partitions,
    distribution,
    migrate: migrateStore,
    close: async () => {
      if (!owned) return;
      await knex.destroy();
      // The dialect closes PGlite only with a pooled connection: a store closed before its
      // first query would leave it starting in the background, keeping the process alive.
      if (embedded !== undefined) {
        await embedded.waitReady;
        if (!embedded.closed) await embedded.close();
      }
    },
  };
}
