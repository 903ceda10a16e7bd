import type { Knex } from 'knex';
import type { ResolvedStorePartitions } from '../layout';
import type { MigrationNames } from '../migration';
import { rowsOf } from '../rows';
import type { StoreDialect } from '../store';
import { boundLiteral, nextBoundary, tableKind, type RawRunner } from './catalog';
import {
  boundLockWait,
  createPartitionsAhead,
  maintenanceLockKey,
  serverNowMs,
} from './create-ahead';
import { dedupTriggerStatements } from './dedup-trigger';
import { sharedSequence } from './id-sequence';
import { isLockTimeout } from './maintain';
import { objectName, PARTITION_COLUMN, plainName, type PartitionedTable } from './tables';

/** How often the swap asks for the table's lock (each wait bounded by `lockTimeoutMs`). */
const SWAP_TRIES = 10;
/** The old table keeps taking rows until at least this long after the conversion starts. */
const MIN_LEAD_MS = 60 * 60 * 1000;

/** What the conversion needs of the store. @internal */
export interface ConvertTarget {
  readonly knex: Knex;
  readonly names: MigrationNames;
  readonly dialect: StoreDialect;
  readonly partitions: ResolvedStorePartitions;
}

type Run = (sql: string, bindings?: readonly Knex.Value[]) => Promise<unknown>;

/**
 * Step 1, while writers run: the old table's future unique keys (each of its keys plus
 * `created_at`) built without blocking writes (`concurrently` on PostgreSQL; an invalid
 * leftover of an interrupted build is rebuilt), and a `check (created_at < bound)` added
 * `not valid` then validated (a scan that lets writes go on), so that attaching the table as
 * the partition of everything before `bound` needs no scan under the lock.
 */
async function prepare(
  target: ConvertTarget,
  spec: PartitionedTable,
  run: Run,
  boundMs: number,
): Promise<void> {
  const { names, dialect } = target;
  const old = names.table(spec.table);
  // `concurrently` waits for every older transaction of the database: only worth it when
  // there are rows to index while writers run.
  const populated =
    rowsOf<{ found: boolean }>(
      (await run(`select exists (select 1 from ${old}) as found`)) as never,
    )[0]?.found === true;
  const concurrently = dialect === 'postgres' && populated ? 'concurrently' : '';
  for (const key of spec.keys) {
    const index = plainName(names, spec, key.suffix);
    const qualified = `${names.schema}.${index}`;
    const found = rowsOf<{ valid: boolean }>(
      (await run(
        `select i.indisvalid as valid from pg_index i where i.indexrelid = to_regclass(?)`,
        [qualified],
      )) as never,
    )[0];
    if (found !== undefined && !found.valid) await run(`drop index ${concurrently} ${qualified}`);
    if (found === undefined || !found.valid) {
      await run(
        `create unique index ${concurrently} ${index}
           on ${old} (${key.columns}, ${PARTITION_COLUMN})`,
      );
    }
  }
  const bound = plainName(names, spec, 'bound');
  // Adding (or dropping) the check locks the table for a moment: asked for with
  // `lockTimeoutMs`, so that writers never queue behind it waiting for a long transaction.
  await withLockTimeout(run, target.partitions.lockTimeoutMs, async () => {
    await run(`alter table ${old} drop constraint if exists ${bound}`);
    await run(
      `alter table ${old} add constraint ${bound}
         check (${PARTITION_COLUMN} < ${boundLiteral(boundMs, 'MAXVALUE')}) not valid`,
    );
  });
  await run(`alter table ${old} validate constraint ${bound}`);
}

/**
 * Runs `work` on the pinned session with `lock_timeout` set, asking again (up to
 * {@link SWAP_TRIES} times) when a lock was not granted in time.
 */
async function withLockTimeout(
  run: Run,
  lockTimeoutMs: number,
  work: () => Promise<void>,
): Promise<void> {
  await run(`select set_config('lock_timeout', ?, false)`, [`${lockTimeoutMs}ms`]);
  try {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await work();
      } catch (error) {
        if (!isLockTimeout(error) || attempt >= SWAP_TRIES) throw error;
      }
    }
  } finally {
    await run('reset lock_timeout');
  }
}

/**
 * The definitions of the old table's plain indexes, read before the swap renames them, so
 * that the partitioned table gets exactly the same ones and attaching the old table adopts
 * its indexes instead of building new ones under the lock.
 */
async function indexDefinitions(
  trx: Knex.Transaction,
  names: MigrationNames,
  spec: PartitionedTable,
): Promise<Map<string, string>> {
  const defs = new Map<string, string>();
  for (const suffix of spec.indexes) {
    const qualified = `${names.schema}.${objectName(names, spec, suffix)}`;
    const result = await trx.raw(`select pg_get_indexdef(to_regclass(?)) as def`, [qualified]);
    const def = rowsOf<{ def: string | null }>(result)[0]?.def;
    if (def !== null && def !== undefined) defs.set(suffix, def);
  }
  return defs;
}

/**
 * The catalog changes of the swap, in order: the old table renamed (with its indexes and
 * keys) to the `_plain` names, the partitioned table created in its place with the same
 * columns, checks, keys (each plus `created_at`) and indexes, the old table attached as the
 * partition of everything before `bound` (or dropped when empty), and the dedup trigger.
 */
function swapStatements(
  names: MigrationNames,
  spec: PartitionedTable,
  boundMs: number,
  empty: boolean,
  defs: ReadonlyMap<string, string>,
  sequence: { readonly before: readonly string[]; readonly after: readonly string[] },
): string[] {
  const t = names.table(spec.table);
  const legacy = names.table(`${spec.table}_plain`);
  const bound = plainName(names, spec, 'bound');
  return [
    `alter table ${t} rename to ${names.name(`${spec.table}_plain`)}`,
    ...[...defs.keys()].map(
      (suffix) =>
        `alter index ${names.schema}.${objectName(names, spec, suffix)}
           rename to ${plainName(names, spec, suffix)}`,
    ),
    ...spec.keys.flatMap((key) => [
      `alter table ${legacy} drop constraint ${objectName(names, spec, key.suffix)}`,
      `alter table ${legacy} add constraint ${plainName(names, spec, key.suffix)}
         ${key.kind} using index ${plainName(names, spec, key.suffix)}`,
    ]),
    ...sequence.before,
    `create table ${t} (like ${legacy} including defaults including constraints)
       partition by range (${PARTITION_COLUMN})`,
    `alter table ${t} drop constraint ${bound}`,
    ...spec.keys.map(
      (key) =>
        `alter table ${t} add constraint ${objectName(names, spec, key.suffix)}
           ${key.kind} (${key.columns}, ${PARTITION_COLUMN})`,
    ),
    ...defs.values(),
    ...sequence.after,
    ...(empty
      ? [`drop table ${legacy}`]
      : [
          `alter table ${t} attach partition ${legacy}
             for values from (MINVALUE) to (${boundLiteral(boundMs, 'MAXVALUE')})`,
          `alter table ${legacy} drop constraint ${bound}`,
        ]),
    ...dedupTriggerStatements(names, spec),
  ];
}

/**
 * Step 2, one short transaction under an `access exclusive` lock on the old table (writers
 * wait for it, not for a scan: every statement is a catalog change): the old table becomes
 * `<table>_plain`, the partition of every `created_at` before `bound`; a partitioned table
 * takes its name, with partitions from `bound` on, a default partition and the dedup
 * trigger. Resolves to false when another process converted it first.
 */
async function swap(
  trx: Knex.Transaction,
  target: ConvertTarget,
  spec: PartitionedTable,
  boundMs: number,
): Promise<boolean> {
  const { names, partitions } = target;
  const t = names.table(spec.table);
  await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [maintenanceLockKey(names, spec)]);
  await boundLockWait(trx, partitions.lockTimeoutMs);
  if ((await tableKind(trx, t)) !== 'r') return false;
  await trx.raw(`lock table ${t} in access exclusive mode`);
  if ((await serverNowMs(trx)) >= boundMs) {
    throw new Error(`the conversion of ${t} took past its bound; run it again`);
  }
  // An empty table (a new schema) needs no partition for its past: it is dropped, and the
  // ranges start at the current interval.
  const empty =
    rowsOf<{ empty: boolean }>(await trx.raw(`select not exists (select 1 from ${t}) as empty`))[0]
      ?.empty === true;
  const defs = await indexDefinitions(trx, names, spec);
  const sequence = await sharedSequence(trx, names, spec);
  for (const statement of swapStatements(names, spec, boundMs, empty, defs, sequence)) {
    await trx.raw(statement);
  }
  await createPartitionsAhead(trx, names, spec, partitions);
  return true;
}

/** {@link swap}, asked again when the table's lock was not granted within `lockTimeoutMs`. */
async function swapWithRetries(
  knex: Knex,
  connection: unknown,
  target: ConvertTarget,
  spec: PartitionedTable,
  boundMs: number,
): Promise<boolean> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await knex.transaction((trx) => swap(trx, target, spec, boundMs), { connection });
    } catch (error) {
      if (!isLockTimeout(error) || attempt >= SWAP_TRIES) throw error;
    }
  }
}

/**
 * Converts the plain table `spec` names (`inbox_records`, `outbox`) into the partitioned
 * layout while writers keep writing (docs/store.md, "Moving a live table to the partitioned
 * layout"); does nothing when it is partitioned already. Under a session advisory lock, so
 * concurrent migrators convert it once. Resolves to whether this call converted it. @internal
 */
export async function convertToPartitioned(
  target: ConvertTarget,
  spec: PartitionedTable,
): Promise<boolean> {
  const { knex, names, partitions } = target;
  const table = names.table(spec.table);
  if ((await tableKind(knex, table)) !== 'r') return false;
  const client = knex.client as unknown as {
    acquireConnection(): Promise<unknown>;
    releaseConnection(connection: unknown): Promise<unknown>;
  };
  const connection = await client.acquireConnection();
  const run: Run = (sql, bindings = []) =>
    knex
      .raw(sql, bindings as Knex.Value[])
      .connection(connection)
      .options({ query_timeout: 0 });
  // Every statement on the pinned connection: a pool of one (PGlite's) has no other.
  const pinned: RawRunner = { raw: run };
  const lockKey = `justonce:convert:${table}`;
  try {
    await run(`select set_config('statement_timeout', '0', false)`);
    await run('select pg_advisory_lock(hashtext(?))', [lockKey]);
    try {
      if ((await tableKind(pinned, table)) !== 'r') return false;
      const lead = Math.max(MIN_LEAD_MS, 2 * partitions.intervalMs);
      const boundMs = nextBoundary((await serverNowMs(pinned)) + lead, partitions.intervalMs);
      try {
        await prepare(target, spec, run, boundMs);
        return await swapWithRetries(knex, connection, target, spec, boundMs);
      } catch (error) {
        // The bound must not outlive a failed conversion: past it, the plain table would
        // refuse every insert.
        await withLockTimeout(run, partitions.lockTimeoutMs, async () => {
          await run(
            `alter table ${table} drop constraint if exists ${plainName(names, spec, 'bound')}`,
          );
        }).catch(() => undefined);
        throw error;
      }
    } finally {
      await run('select pg_advisory_unlock(hashtext(?))', [lockKey]);
    }
  } finally {
    await run('reset statement_timeout').catch(() => undefined);
    await client.releaseConnection(connection);
  }
}
