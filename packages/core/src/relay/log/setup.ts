import type { Knex } from 'knex';
import { ConfigurationError } from '../../errors/configuration-error';
import { rowsOf } from '../../store/migrate';
import type { Store } from '../../store/store';
import type { ResolvedLogOptions } from './options';

/** PostgreSQL's "already exists" (a concurrent `start()` created it first). */
const DUPLICATE_OBJECT = '42710';

function codeOf(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

async function one<T>(
  knex: Knex,
  sql: string,
  bindings: readonly Knex.Value[] = [],
): Promise<T | undefined> {
  return rowsOf<T>(await knex.raw(sql, bindings))[0];
}

/**
 * Refuses a server that cannot serve the log mode: `wal_level` must be `logical` (set in
 * postgresql.conf; a restart applies it), and the store's role must have `REPLICATION` (or
 * be a superuser) to open a replication connection. @internal
 */
export async function checkServer(knex: Knex): Promise<void> {
  const level = await one<{ wal_level: string }>(knex, 'show wal_level');
  if (level?.wal_level !== 'logical') {
    throw new ConfigurationError(
      `mode 'log' needs wal_level = logical; the server has ${level?.wal_level ?? 'none'} (set it in postgresql.conf and restart the server, or relay by polling)`,
      { walLevel: level?.wal_level },
    );
  }
  const role = await one<{ name: string; ok: boolean }>(
    knex,
    `select rolname as name, rolreplication or rolsuper as ok from pg_roles where rolname = current_user`,
  );
  if (role?.ok !== true) {
    throw new ConfigurationError(
      `mode 'log' needs a role with REPLICATION: alter role ${role?.name ?? 'the store role'} with replication`,
      { role: role?.name },
    );
  }
}

/** The statements that create what the log mode reads, for the error that names them. */
export function setupStatements(store: Store, log: ResolvedLogOptions): string[] {
  const viaRoot = store.layout === 'partitioned' ? ', publish_via_partition_root = true' : '';
  return [
    `create publication "${log.publication}" for table ${store.names.table('outbox')} with (publish = 'insert'${viaRoot})`,
    `select pg_create_logical_replication_slot('${log.slot}', 'pgoutput')`,
  ];
}

/**
 * Makes sure the publication and the slot exist and fit: the publication covers the outbox,
 * the slot is a `pgoutput` slot of this database. With `create`, what is missing is created,
 * the publication first: a slot decodes each transaction with the catalog as of its commit,
 * and would fail on one that committed before its publication existed. Events committed
 * before the slot was created are not in it (docs/relays.md says how to switch). @internal
 */
export async function ensurePublicationAndSlot(
  store: Store,
  log: ResolvedLogOptions,
): Promise<void> {
  const { knex, names } = store;
  const [createPublication, createSlot] = setupStatements(store, log) as [string, string];
  const missing = (what: string, statement: string): ConfigurationError =>
    new ConfigurationError(
      `the ${what} of mode 'log' does not exist: give log.create = true, or run ${statement}`,
      { slot: log.slot, publication: log.publication },
    );
  const publication = await one<{ covers: boolean }>(
    knex,
    `select exists (select 1 from pg_publication_tables t
        where t.pubname = p.pubname and t.schemaname = ? and t.tablename = ?) as covers
       from pg_publication p where p.pubname = ?`,
    [store.schema, names.raw('outbox'), log.publication],
  );
  if (publication === undefined) {
    if (!log.create) throw missing(`publication ${log.publication}`, createPublication);
    await knex.raw(createPublication).catch((error: unknown) => {
      if (codeOf(error) !== DUPLICATE_OBJECT) throw error;
    });
  } else if (!publication.covers) {
    throw new ConfigurationError(
      `publication ${log.publication} does not cover ${names.table('outbox')}: give log.publication a name of its own`,
      { publication: log.publication },
    );
  }
  const slot = await one<{ plugin: string | null; ours: boolean }>(
    knex,
    `select plugin, database = current_database() as ours
       from pg_replication_slots where slot_name = ?`,
    [log.slot],
  );
  if (slot === undefined) {
    if (!log.create) throw missing(`slot ${log.slot}`, createSlot);
    await knex
      .raw(`select pg_create_logical_replication_slot(?, 'pgoutput')`, [log.slot])
      .catch((error: unknown) => {
        if (codeOf(error) !== DUPLICATE_OBJECT) throw error;
      });
  } else if (slot.plugin !== 'pgoutput' || !slot.ours) {
    throw new ConfigurationError(
      `slot ${log.slot} is not a pgoutput slot of this database (plugin ${slot.plugin ?? 'none'}): give log.slot a name of its own`,
      { slot: log.slot, plugin: slot.plugin },
    );
  }
}

/** The slot's confirmed position and the WAL it retains, as the server reports them. @internal */
export interface SlotPosition {
  readonly confirmedLsn: string | null;
  readonly lagBytes: number;
}

/** Reads the slot's `confirmed_flush_lsn` and its distance to the current WAL position. */
export async function readSlotPosition(knex: Knex, slot: string): Promise<SlotPosition | null> {
  const row = await one<{ confirmed: string | null; lag: string | number | null }>(
    knex,
    `select confirmed_flush_lsn::text as confirmed,
            pg_wal_lsn_diff(pg_current_wal_lsn(), coalesce(confirmed_flush_lsn, restart_lsn)) as lag
       from pg_replication_slots where slot_name = ?`,
    [slot],
  );
  if (row === undefined) return null;
  return { confirmedLsn: row.confirmed, lagBytes: Math.max(0, Number(row.lag ?? 0)) };
}
