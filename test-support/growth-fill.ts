/**
 * The set-based fill of `pnpm bench growth` (benchmarks/growth.ts) and of the hot statements'
 * plan checks (packages/core/test/hot-query-plans.test.ts): rows written straight into a
 * store's tables with `insert … select … from generate_series`, in chunks, never through the
 * API.
 *
 * What the rows look like (every size adds rows `from`..`to` of the same series, so a larger
 * size only adds the difference):
 * - ages spread evenly over the last 29 days of the 30-day retention window (`RETENTION_MS`),
 *   each row expiring 30 days after it was written: none of them is stale during a run (a
 *   day's margin); stale rows are added separately, the same number at every size
 *   ({@link addStaleRows});
 * - keys as random as a broker's ids: an md5 per row (32 hex digits), spread over 20
 *   consumers and 20 operations, so new keys land all over each primary key;
 * - `inbox_records`: 0.1 % dead-lettered (`FAILED_FINAL`), the rest `SUCCEEDED`;
 * - `idempotency`: 1 % `FAILED_RETRIABLE`, 1 % `FAILED_FINAL`, 5 per million `IN_PROGRESS`
 *   with their lease run out, the rest `SUCCEEDED` with a small JSON response;
 * - `inbox_attempts`: counters of messages that stopped failing, 1 to 5 attempts;
 * - `outbox`: events over 10 destinations and 100 000 partition keys, published and kept
 *   (`onPublished: 'keep'`), 1 per 100 000 dead, none pending;
 * - `consumer_activity`: a row per consumer and minute of the whole window (864 000 rows,
 *   written once: its size follows the consumers and the window, not the traffic).
 *
 * Before filling a table its indexes and key constraints are dropped, and afterwards created
 * again from the definitions PostgreSQL gave for them (`pg_get_indexdef`,
 * `pg_get_constraintdef`), so they are the migrations' own; then `vacuum (analyze)`, as
 * autovacuum would soon do in production (it also sets the visibility map, without which no
 * index-only scan skips the heap). The tables stay logged.
 */
import { Client } from 'pg';
import type { Store } from '@justonce/core';

/** The retention window the growth benchmark runs with: 30 days. */
export const RETENTION_MS = 30 * 24 * 3_600_000;

/** The consumers (and operations) the rows are spread over. */
const SPREAD = 20;

/** Rows per `insert` statement. */
const CHUNK = 1_000_000;

/** A table the fill writes, with its insert of the series rows `g` in `s` (`s.at` an age). */
interface FillTable {
  readonly table: 'inbox_records' | 'idempotency' | 'inbox_attempts' | 'outbox';
  readonly columns: string;
  readonly select: string;
}

/** A row's age: evenly spread over the last 29 days. */
const AGE = `now() - random() * interval '29 days'`;
const EXPIRES = `at + interval '${RETENTION_MS} milliseconds'`;

const TABLES: readonly FillTable[] = [
  {
    table: 'inbox_records',
    columns:
      'consumer, scope, message_id, status, fingerprint, attempts, error, created_at, expires_at',
    select: `'consumer-' || (g % ${SPREAD}), 'default', md5('r' || g),
      case when g % 1000 = 0 then 'FAILED_FINAL' else 'SUCCEEDED' end,
      md5('f' || g) || md5('h' || g),
      case when g % 1000 = 0 then 5 else 1 end,
      case when g % 1000 = 0 then '{"reason":"max-attempts"}'::jsonb end,
      at, ${EXPIRES}`,
  },
  {
    table: 'idempotency',
    columns: `scope, operation, key, request_hash, status, owner_id, lease_until, response, error,
      attempts, created_at, updated_at, expires_at`,
    select: `'default', 'op-' || (g % ${SPREAD}), md5('k' || g), md5('q' || g) || md5('p' || g),
      case when g % 100 = 1 then 'FAILED_RETRIABLE' when g % 100 = 2 then 'FAILED_FINAL'
           when g % 200000 = 3 then 'IN_PROGRESS' else 'SUCCEEDED' end,
      md5('o' || g),
      case when g % 200000 = 3 then at + interval '30 seconds' end,
      case when g % 100 > 2 then ('{"ok":true,"n":' || g || '}')::json end,
      case when g % 100 in (1, 2) then '{"name":"Error","message":"declined"}'::jsonb end,
      1 + (g % 100 = 1)::int, at, at, ${EXPIRES}`,
  },
  {
    table: 'inbox_attempts',
    columns: 'scope, consumer, message_id, attempts, first_attempt_at, last_attempt_at, last_error',
    select: `'default', 'consumer-' || (g % ${SPREAD}), md5('a' || g), 1 + g % 5,
      at, at + (g % 5) * interval '1 second', '{"name":"Error","message":"timeout"}'::jsonb`,
  },
  {
    table: 'outbox',
    columns: `destination, partition_key, message_id, headers, payload, created_at, available_at,
      attempts, last_error, status, published_at`,
    select: `'topic-' || (g % 10), 'key-' || (g % 100000), md5('e' || g),
      '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}'::jsonb,
      convert_to('{"order":' || g || ',"amountCents":' || (g % 9900) || ',"note":"'
                 || md5(g::text) || '"}', 'UTF8'),
      at, at, case when g % 100000 = 7 then 10 else 1 end,
      case when g % 100000 = 7 then 'broker refused' end,
      case when g % 100000 = 7 then 'dead' else 'published' end,
      case when g % 100000 = 7 then null else at + interval '20 milliseconds' end`,
  },
];

/** The tables the fill writes, by name: what {@link fillTo} reports. */
export type FillTableName = FillTable['table'] | 'consumer_activity';

/** What {@link fillTo} fills and where it reports. */
export interface FillOptions {
  /** The tables to fill; default all of them. */
  readonly tables?: readonly FillTableName[];
  /** Called with a line per table filled; default `console.log`. */
  readonly log?: (line: string) => void;
  /** Fill the tables at once, each on its own session; default one after the other. */
  readonly concurrent?: boolean;
}

/** How long filling one table took, in seconds: inserts, index builds, vacuum. */
export interface FillTiming {
  readonly table: FillTableName;
  readonly rows: number;
  readonly insertSeconds: number;
  readonly indexSeconds: number;
  readonly vacuumSeconds: number;
}

/** An index of a table, as PostgreSQL defines it, and the constraint it backs if any. */
interface IndexDefinition {
  readonly index: string;
  readonly definition: string;
  readonly constraint: string | null;
  readonly constraintDefinition: string | null;
}

async function indexesOf(client: Client, table: string): Promise<IndexDefinition[]> {
  const { rows } = await client.query<IndexDefinition>(
    `select format('%I.%I', n.nspname, ic.relname) as index,
            pg_get_indexdef(i.indexrelid) as definition,
            quote_ident(c.conname) as constraint,
            pg_get_constraintdef(c.oid) as "constraintDefinition"
       from pg_index i
       join pg_class ic on ic.oid = i.indexrelid
       join pg_namespace n on n.oid = ic.relnamespace
       left join pg_constraint c on c.conindid = i.indexrelid and c.contype in ('p', 'u')
      where i.indrelid = $1::regclass
      order by ic.relname`,
    [table],
  );
  return rows;
}

const seconds = (since: number): number => (performance.now() - since) / 1000;

/**
 * Runs `insert` with the table's indexes dropped, builds them again as they were, then
 * vacuums and analyzes the table. Resolves to the seconds each part took.
 */
async function withoutIndexes(
  client: Client,
  table: string,
  insert: () => Promise<void>,
): Promise<Omit<FillTiming, 'table' | 'rows'>> {
  const indexes = await indexesOf(client, table);
  for (const ix of indexes) {
    await client.query(
      ix.constraint === null
        ? `drop index ${ix.index}`
        : `alter table ${table} drop constraint ${ix.constraint}`,
    );
  }
  let started = performance.now();
  await insert();
  const insertSeconds = seconds(started);
  started = performance.now();
  for (const ix of indexes) {
    await client.query(
      ix.constraint === null
        ? // A partitioned table's index reads `ON ONLY`: built so, it would cover no partition.
          ix.definition.replace(' ON ONLY ', ' ON ')
        : `alter table ${table} add constraint ${ix.constraint} ${ix.constraintDefinition}`,
    );
  }
  const indexSeconds = seconds(started);
  started = performance.now();
  await client.query(`vacuum (analyze) ${table}`);
  return { insertSeconds, indexSeconds, vacuumSeconds: seconds(started) };
}

/** Whether `table` is a partitioned table (the store's partitioned layout). */
async function isPartitioned(client: Client, table: string): Promise<boolean> {
  const { rows } = await client.query<{ kind: string }>(
    `select relkind as kind from pg_class where oid = $1::regclass`,
    [table],
  );
  return rows[0]?.kind === 'p';
}

/**
 * A row of each table the partitioned layout partitions, dated just before the fill's 29
 * days: the anchor {@link partitionsForTheFill} writes.
 */
const ANCHORS = {
  inbox_records: `(consumer, scope, message_id, status, fingerprint, attempts, created_at,
                   expires_at)
    values ('fill-anchor', 'default', 'fill-anchor', 'SUCCEEDED', md5('anchor'), 1,
            now() - interval '29 days 1 hour', now())`,
  outbox: `(destination, partition_key, message_id, payload, status, published_at, created_at)
    values ('fill-anchor', null, 'fill-anchor', '\\x00'::bytea, 'published', now(),
            now() - interval '29 days 1 hour')`,
} as const;

/**
 * On the partitioned layout, creates the partitions of the fill's 29 days in `tables` (those
 * of `inbox_records` and `outbox` it fills) before it writes: `migrate()` creates them from
 * now on, and for the rows its default partition holds from before (moving them in). One row
 * dated at the start of the fill's range goes into each table first, and is deleted once the
 * partitions exist, so the fill writes straight into them.
 */
async function partitionsForTheFill(
  url: string,
  store: Store,
  tables: ReadonlyArray<keyof typeof ANCHORS>,
): Promise<void> {
  const client = await fillSession(url);
  try {
    const anchored: string[] = [];
    for (const name of tables) {
      const table = store.names.table(name);
      if (!(await isPartitioned(client, table))) continue;
      await client.query(`insert into ${table} ${ANCHORS[name]}`);
      anchored.push(table);
    }
    if (anchored.length === 0) return;
    await store.migrate();
    for (const table of anchored) {
      await client.query(`delete from ${table} where message_id = 'fill-anchor'`);
    }
  } finally {
    await client.end();
  }
}

/** A session for the fill: index builds get memory and parallel workers. */
async function fillSession(url: string): Promise<Client> {
  const client = new Client({ connectionString: url });
  await client.connect();
  await client.query(`set maintenance_work_mem = '1GB'`);
  await client.query('set max_parallel_maintenance_workers = 2');
  return client;
}

/** Grows one table from `from` rows of the series to `to`, on a session of its own. */
async function fillTable(
  url: string,
  store: Store,
  spec: FillTable,
  from: number,
  to: number,
): Promise<FillTiming> {
  const client = await fillSession(url);
  try {
    const table = store.names.table(spec.table);
    // On the partitioned layout, the dedup trigger (one advisory lock and probe per row) is
    // off while the fill writes its distinct keys, as the indexes are.
    const partitioned = await isPartitioned(client, table);
    if (partitioned) await client.query(`alter table ${table} disable trigger user`);
    const timing = await withoutIndexes(client, table, async () => {
      try {
        for (let start = from + 1; start <= to; start += CHUNK) {
          const end = Math.min(to, start + CHUNK - 1);
          await client.query(
            `insert into ${table} (${spec.columns})
             select ${spec.select}
               from (select g, ${AGE} as at from generate_series($1::bigint, $2::bigint) g) s`,
            [start, end],
          );
        }
      } finally {
        if (partitioned) await client.query(`alter table ${table} enable trigger user`);
      }
    });
    return { table: spec.table, rows: to - from, ...timing };
  } finally {
    await client.end();
  }
}

/**
 * Grows each big table of `store` from `from` rows to `to` (rows `from + 1`..`to` of the
 * series; `from` 0 on a fresh schema, which also gets its `consumer_activity` rows), one table
 * after the other or, with `concurrent`, all at once (then each table's time includes the
 * others' load). Logs each table's timing as it ends and resolves to all of them.
 */
export async function fillTo(
  url: string,
  store: Store,
  from: number,
  to: number,
  options: FillOptions = {},
): Promise<FillTiming[]> {
  const wanted = (table: FillTableName): boolean => options.tables?.includes(table) ?? true;
  const log = options.log ?? console.log;
  const fill = async (spec: FillTable): Promise<FillTiming> => {
    const timing = await fillTable(url, store, spec, from, to);
    log(`  filled ${spec.table} to ${to} rows: ${describeTiming(timing)}`);
    return timing;
  };
  const specs = TABLES.filter((t) => wanted(t.table));
  if (from === 0) {
    const partitioned = (['inbox_records', 'outbox'] as const).filter(wanted);
    await partitionsForTheFill(url, store, partitioned);
  }
  const timings: FillTiming[] = [];
  if (options.concurrent === true) timings.push(...(await Promise.all(specs.map(fill))));
  else for (const spec of specs) timings.push(await fill(spec));
  if (from === 0 && wanted('consumer_activity')) {
    const client = await fillSession(url);
    try {
      timings.push(await fillActivity(client, store));
    } finally {
      await client.end();
    }
    log(`  filled consumer_activity: ${describeTiming(timings.at(-1)!)}`);
  }
  return timings;
}

/** One row per consumer and minute of the window in `consumer_activity`. */
async function fillActivity(client: Client, store: Store): Promise<FillTiming> {
  const table = store.names.table('consumer_activity');
  const minutes = Math.floor(RETENTION_MS / 60_000) - 1;
  const timing = await withoutIndexes(client, table, async () => {
    await client.query(
      `insert into ${table} (consumer, minute, handled, duplicates, dead_lettered)
       select 'consumer-' || c, date_trunc('minute', now()) - m * interval '1 minute',
              100 + (m % 50), m % 3, (m % 1000 = 0)::int
         from generate_series(0, ${SPREAD - 1}) c, generate_series(1, ${minutes}) m`,
    );
  });
  return { table: 'consumer_activity', rows: SPREAD * minutes, ...timing };
}

/** A fill's timing in words. */
export function describeTiming(t: FillTiming): string {
  const total = t.insertSeconds + t.indexSeconds + t.vacuumSeconds;
  return (
    `${t.rows} rows in ${total.toFixed(1)} s (insert ${t.insertSeconds.toFixed(1)} s, ` +
    `indexes ${t.indexSeconds.toFixed(1)} s, vacuum ${t.vacuumSeconds.toFixed(1)} s; ` +
    `${Math.round(t.rows / total)} rows/s)`
  );
}

/**
 * Adds `count` stale rows to each table retention cleans by age (`idempotency`,
 * `inbox_records`, `inbox_attempts`): written 31 to 33 days ago and expired, as a day's
 * traffic past the window would be. Keys are unique per `tag`.
 */
export async function addStaleRows(store: Store, tag: string, count: number): Promise<void> {
  // A day past the window at least: on the partitioned layout a partition goes once it ends
  // before the window, so a row of the day the window's edge falls in waits for that day's end.
  const age = `now() - interval '${RETENTION_MS} milliseconds' - interval '1 day' - random() * interval '2 days'`;
  const t = (name: Parameters<Store['names']['table']>[0]): string => store.names.table(name);
  const series = `(select g, ${age} as at from generate_series(1, ?::integer) g) s`;
  // A few thousand rows a statement: on the partitioned layout each record inserted holds an
  // advisory lock until commit, and one statement of all of them could fill PostgreSQL's
  // shared lock table (docs/store.md, "The dedup guarantee on each layout").
  for (let from = 1; from <= count; from += 2_000) {
    await store.knex.raw(
      `insert into ${t('inbox_records')}
         (consumer, scope, message_id, status, fingerprint, attempts, created_at, expires_at)
       select 'consumer-' || (g % ${SPREAD}), 'default', ? || g, 'SUCCEEDED', md5('f' || g), 1,
              at, ${EXPIRES}
         from (select g, ${age} as at from generate_series(?::integer, ?::integer) g) s`,
      [`stale-${tag}-`, from, Math.min(count, from + 1_999)],
    );
  }
  await store.knex.raw(
    `insert into ${t('idempotency')}
       (scope, operation, key, request_hash, status, owner_id, response, attempts,
        created_at, updated_at, expires_at)
     select 'default', 'op-' || (g % ${SPREAD}), ? || g, md5('q' || g), 'SUCCEEDED',
            md5('o' || g), '{"ok":true}'::json, 1, at, at, ${EXPIRES}
       from ${series}`,
    [`stale-${tag}-`, count],
  );
  await store.knex.raw(
    `insert into ${t('inbox_attempts')}
       (scope, consumer, message_id, attempts, first_attempt_at, last_attempt_at)
     select 'default', 'consumer-' || (g % ${SPREAD}), ? || g, 2, at, at
       from ${series}`,
    [`stale-${tag}-`, count],
  );
}
