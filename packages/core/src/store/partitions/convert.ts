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
  PARTITIONED,
  serverNowMs,
} from './create-ahead';
import { dedupTriggerStatements } from './dedup-trigger';
import { isLockTimeout } from './maintain';

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
 * Step 1, while writers run: the old table's future primary key `(consumer, scope,
 * message_id, created_at)` built without blocking writes (`concurrently` on PostgreSQL; an
 * invalid leftover of an interrupted build is rebuilt), and a `check (created_at < bound)`
 * added `not valid` then validated (a scan that lets writes go on), so that attaching the
 * table as the partition of everything before `bound` needs no scan under the lock.
 */
async function prepare(target: ConvertTarget, run: Run, boundMs: number): Promise<void> {
  const { names, dialect } = target;
  const old = names.table(PARTITIONED.table);
  const key = names.name('inbox_records_plain_pkey');
  const keyQualified = `${names.schema}.${key}`;
  const found = rowsOf<{ valid: boolean }>(
    (await run(`select i.indisvalid as valid from pg_index i where i.indexrelid = to_regclass(?)`, [
      keyQualified,
    ])) as never,
  )[0];
  // `concurrently` waits for every older transaction of the database: only worth it when
  // there are rows to index while writers run.
  const populated =
    rowsOf<{ found: boolean }>(
      (await run(`select exists (select 1 from ${old}) as found`)) as never,
    )[0]?.found === true;
  const concurrently = dialect === 'postgres' && populated ? 'concurrently' : '';
  if (found !== undefined && !found.valid) await run(`drop index ${concurrently} ${keyQualified}`);
  if (found === undefined || !found.valid) {
    await run(
      `create unique index ${concurrently} ${key}
         on ${old} (consumer, scope, message_id, created_at)`,
    );
  }
  const bound = names.name('inbox_records_plain_bound');
  // Adding (or dropping) the check locks the table for a moment: asked for with
  // `lockTimeoutMs`, so that writers never queue behind it waiting for a long transaction.
  await withLockTimeout(run, target.partitions.lockTimeoutMs, async () => {
    await run(`alter table ${old} drop constraint if exists ${bound}`);
    await run(
      `alter table ${old} add constraint ${bound}
         check (created_at < ${boundLiteral(boundMs, 'MAXVALUE')}) not valid`,
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
 * Step 2, one short transaction under an `access exclusive` lock on the old table (writers
 * wait for it, not for a scan: every statement is a catalog change): the old table becomes
 * `inbox_records_plain`, the partition of every `created_at` before `bound`; a partitioned
 * `inbox_records` takes its name, with partitions from `bound` on, a default partition and
 * the dedup trigger. Resolves to false when another process converted it first.
 */
async function swap(
  trx: Knex.Transaction,
  target: ConvertTarget,
  boundMs: number,
): Promise<boolean> {
  const { names, partitions } = target;
  const t = names.table(PARTITIONED.table);
  const legacy = names.table('inbox_records_plain');
  await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [maintenanceLockKey(names)]);
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
  const statements = [
    `alter table ${t} rename to ${names.name('inbox_records_plain')}`,
    `alter index ${names.schema}.${names.name('inbox_records_expires_at_idx')}
       rename to ${names.name('inbox_records_plain_expires_at_idx')}`,
    `alter index ${names.schema}.${names.name('inbox_records_succeeded_created_idx')}
       rename to ${names.name('inbox_records_plain_succeeded_created_idx')}`,
    `alter table ${legacy} drop constraint ${names.name('inbox_records_pkey')}`,
    `alter table ${legacy} add constraint ${names.name('inbox_records_plain_pkey')}
       primary key using index ${names.name('inbox_records_plain_pkey')}`,
    `create table ${t} (like ${legacy} including defaults including constraints)
       partition by range (created_at)`,
    `alter table ${t} drop constraint ${names.name('inbox_records_plain_bound')}`,
    `alter table ${t} add constraint ${names.name('inbox_records_pkey')}
       primary key (consumer, scope, message_id, created_at)`,
    `create index ${names.name('inbox_records_expires_at_idx')} on ${t} (expires_at)`,
    `create index ${names.name('inbox_records_succeeded_created_idx')}
       on ${t} (created_at, consumer) where status = 'SUCCEEDED'`,
    ...(empty
      ? [`drop table ${legacy}`]
      : [
          `alter table ${t} attach partition ${legacy}
             for values from (MINVALUE) to (${boundLiteral(boundMs, 'MAXVALUE')})`,
          `alter table ${legacy} drop constraint ${names.name('inbox_records_plain_bound')}`,
        ]),
    ...dedupTriggerStatements(names),
  ];
  for (const statement of statements) await trx.raw(statement);
  await createPartitionsAhead(trx, names, partitions);
  return true;
}

/** {@link swap}, asked again when the table's lock was not granted within `lockTimeoutMs`. */
async function swapWithRetries(
  knex: Knex,
  connection: unknown,
  target: ConvertTarget,
  boundMs: number,
): Promise<boolean> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await knex.transaction((trx) => swap(trx, target, boundMs), { connection });
    } catch (error) {
      if (!isLockTimeout(error) || attempt >= SWAP_TRIES) throw error;
    }
  }
}

/**
 * Converts a plain `inbox_records` into the partitioned layout while inboxes keep writing
 * (docs/store.md, "Moving a live table to the partitioned layout"); does nothing when it is
 * partitioned already. Under a session advisory lock, so concurrent migrators convert it once.
 * Resolves to whether this call converted it. @internal
 */
export async function convertToPartitioned(target: ConvertTarget): Promise<boolean> {
  const { knex, names, partitions } = target;
  if ((await tableKind(knex, names.table(PARTITIONED.table))) !== 'r') return false;
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
  const lockKey = `justonce:convert:${names.table(PARTITIONED.table)}`;
  try {
    await run(`select set_config('statement_timeout', '0', false)`);
    await run('select pg_advisory_lock(hashtext(?))', [lockKey]);
    try {
      if ((await tableKind(pinned, names.table(PARTITIONED.table))) !== 'r') return false;
      const lead = Math.max(MIN_LEAD_MS, 2 * partitions.intervalMs);
      const boundMs = nextBoundary((await serverNowMs(pinned)) + lead, partitions.intervalMs);
      try {
        await prepare(target, run, boundMs);
        return await swapWithRetries(knex, connection, target, boundMs);
      } catch (error) {
        // The bound must not outlive a failed conversion: past it, the plain table would
        // refuse every insert.
        await withLockTimeout(run, partitions.lockTimeoutMs, async () => {
          await run(
            `alter table ${names.table(PARTITIONED.table)}
               drop constraint if exists ${names.name('inbox_records_plain_bound')}`,
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
