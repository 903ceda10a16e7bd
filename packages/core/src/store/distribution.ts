import type { Knex } from 'knex';
import { ConfigurationError } from '../errors';
import type { MigrationNames } from './migration';
import { rowsOf } from './rows';
import { tableKind } from './partitions/catalog';

/**
 * Which keys `store.migrate()` gives the tables whose unique keys would not let a distributed
 * PostgreSQL (Citus) shard them: `'none'` (the default), the single-database keys, or
 * `'distributable'`, where every unique key of the outbox and the dead letters includes the
 * column such a cluster would distribute the table by. See docs/scaling.md.
 */
export type StoreDistribution = 'none' | 'distributable';

/** The outbox's distribution column in the `'distributable'` schema. @internal */
export const DISTRIBUTION_COLUMN = 'distribution_key';

/** Validates `distribution`, refusing anything but the two values. @internal */
export function resolveDistribution(value: unknown): StoreDistribution {
  if (value === undefined) return 'none';
  if (value !== 'none' && value !== 'distributable') {
    throw new ConfigurationError(`distribution must be 'none' or 'distributable'`, {
      distribution: value,
    });
  }
  return value;
}

/**
 * An outbox event's distribution key: its partition key, or for an event without one its
 * message id, so that keyless events spread over the shards by their id, and a keyless id
 * added twice meets its first row under the same key. @internal
 */
export function distributionKeyOf(key: string | null, messageId: string): string {
  return key ?? messageId;
}

/**
 * The outbox insert's column list and the placeholders of one row, with the distribution
 * column when the store is distributable (its value bound last in each row). @internal
 */
export function outboxInsertShape(distribution: StoreDistribution): {
  readonly columns: string;
  readonly row: string;
} {
  const distributable = distribution === 'distributable';
  return {
    columns: `destination, partition_key, message_id, headers, payload${
      distributable ? `, ${DISTRIBUTION_COLUMN}` : ''
    }`,
    row: distributable ? '(?, ?, ?, ?::jsonb, ?, ?)' : '(?, ?, ?, ?::jsonb, ?)',
  };
}

/** Lifts the store's client-side bound of one statement, as a migration does (`migrate.ts`). */
const UNBOUNDED = { query_timeout: 0 } as const;

/**
 * Whether the schema's outbox has the distribution column: the schema is distributable, as
 * the catalog says, whatever the store's option. For the operator's rare inserts (a requeue,
 * a redelivery), which then work from a store opened either way (the CLI's, the dashboard's).
 * @internal
 */
export async function schemaIsDistributable(db: Knex, names: MigrationNames): Promise<boolean> {
  const result = await db.raw(
    `select exists (
       select 1 from pg_attribute
        where attrelid = to_regclass(?) and attname = ? and not attisdropped
     ) as present`,
    [names.table('outbox'), DISTRIBUTION_COLUMN],
  );
  return rowsOf<{ present: boolean }>(result)[0]?.present === true;
}

/**
 * The statements that give a migrated schema the distributable keys: the outbox's
 * `distribution_key` (filled for the rows present), its primary key `(id, distribution_key)`
 * and unique `(message_id, distribution_key)`; the dead letters' primary key `(id, scope)`.
 * Each key keeps its name and its leading column, so the lookups by row id and by message id
 * that the old keys served use them as before, and no index is added.
 */
function distributableStatements({ table, name }: MigrationNames): string[] {
  const outbox = table('outbox');
  const letters = table('dead_letters');
  return [
    `lock table ${outbox}, ${letters} in access exclusive mode`,
    `alter table ${outbox} add column ${DISTRIBUTION_COLUMN} text`,
    `update ${outbox} set ${DISTRIBUTION_COLUMN} = coalesce(partition_key, message_id)`,
    `alter table ${outbox} alter column ${DISTRIBUTION_COLUMN} set not null`,
    `alter table ${outbox}
       drop constraint ${name('outbox_pkey')},
       add constraint ${name('outbox_pkey')} primary key (id, ${DISTRIBUTION_COLUMN}),
       drop constraint ${name('outbox_message_id_key')},
       add constraint ${name('outbox_message_id_key')} unique (message_id, ${DISTRIBUTION_COLUMN})`,
    `alter table ${letters}
       drop constraint ${name('dead_letters_pkey')},
       add constraint ${name('dead_letters_pkey')} primary key (id, scope)`,
  ];
}

/**
 * Gives a migrated schema the distributable keys, in one transaction under an advisory lock
 * (so concurrent migrators convert once), unless it has them; never converts back. The
 * transaction locks the outbox and the dead letters `access exclusive` while it fills the
 * outbox's new column (one rewrite of its rows) and builds the new keys; it runs without the
 * store's statement limits, as a migration does. Refuses a schema whose inbox records are
 * partitioned. Resolves to whether this call converted the schema. @internal
 */
export async function makeDistributable(knex: Knex, names: MigrationNames): Promise<boolean> {
  if (await schemaIsDistributable(knex, names)) return false;
  if ((await tableKind(knex, names.table('inbox_records'))) === 'p') {
    // Converted by a store with layout 'partitioned': its dedup trigger and advisory locks are
    // what the distributable schema leaves out (docs/scaling.md).
    throw new ConfigurationError(
      `the inbox's records are partitioned: distribution 'distributable' needs the plain layout; nothing was changed`,
      { distribution: 'distributable', layout: 'partitioned' },
    );
  }
  return knex.transaction(async (trx) => {
    await trx.raw(`select set_config('statement_timeout', '0', true)`).options(UNBOUNDED);
    await trx
      .raw('select pg_advisory_xact_lock(hashtext(?))', [
        `justonce:distribution:${names.table('outbox')}`,
      ])
      .options(UNBOUNDED);
    if (await schemaIsDistributable(trx, names)) return false;
    for (const statement of distributableStatements(names)) {
      await trx.raw(statement).options(UNBOUNDED);
    }
    return true;
  });
}
