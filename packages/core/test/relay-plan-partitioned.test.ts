/**
 * The relay's statements on the partitioned outbox (docs/store.md, "Partitioned layout"):
 * none of them knows an event's `created_at`, so none is pruned to a partition; each must
 * read every partition that holds rows through that partition's copy of the index the plain
 * layout uses (relay-plan.test.ts), never with a sequential scan, planned per call and as the
 * generic plan of a prepared statement. An empty partition (the ones ahead) may be scanned
 * whole: it has no page to read.
 */
import type { Knex } from 'knex';
import { rowsOf, type Store } from '../src';
import { statusQueries } from '../src/admin';
import { claimBindings, claimSql } from '../src/relay/sql/claim';
import { deletePublishedSql } from '../src/relay/sql/cleanup';
import { followersSql } from '../src/relay/sql/followers';
import { scanKeysSql } from '../src/relay/sql/scan-keys';
import { openTestStore } from './db';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function planSteps(result: unknown): PlanNode[] {
  const [row] = rowsOf<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(result);
  const flatten = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flatten)];
  return flatten(row!['QUERY PLAN'][0]!.Plan);
}

function literal(value: Knex.RawBinding): string {
  if (value === null) return 'null';
  if (typeof value === 'number') return String(value);
  const quote = (text: string): string => `'${text.replace(/'/g, "''")}'`;
  if (Array.isArray(value)) return quote(`{${(value as unknown[]).map(String).join(',')}}`);
  return quote(String(value));
}

/** The plan per call and the generic plan of `sql` run as a prepared statement. */
async function plans(
  store: Store,
  sql: string,
  bindings: readonly Knex.RawBinding[],
): Promise<PlanNode[][]> {
  return store.knex.transaction(async (trx) => {
    const custom = planSteps(await trx.raw(`explain (format json) ${sql}`, [...bindings]));
    await trx.raw('set local plan_cache_mode = force_generic_plan');
    const native = trx
      .raw(sql, [...bindings])
      .toSQL()
      .toNative();
    await trx.raw(`prepare justonce_plan_test as ${native.sql}`);
    try {
      const args = bindings.length === 0 ? '' : `(${bindings.map(literal).join(', ')})`;
      const generic = planSteps(
        await trx.raw(`explain (format json) execute justonce_plan_test${args}`),
      );
      return [custom, generic];
    } finally {
      await trx.raw('deallocate justonce_plan_test');
    }
  });
}

const DAY = 24 * 60 * 60_000;

describe('the relay on a partitioned outbox of 200 000 rows (postgres)', () => {
  let store: Store & { dispose(): Promise<void> };
  /** Partition index name → the partitioned table's index it belongs to (raw names). */
  let parentIndex: Map<string, string>;
  /** The partitions that hold rows. */
  let filled: Set<string>;

  beforeAll(async () => {
    store = await openTestStore('postgres', {
      layout: 'partitioned',
      timeouts: { statementMs: 110_000, queryMs: 115_000 },
    });
    const t = store.names.table('outbox');
    // Four past days of published events (as with onPublished: 'keep'), a few pending ones
    // among them, and today's: 10 000 pending events over 1 000 keys among 30 000 published ones. Without the
    // dedup trigger (one advisory lock per row: a statement of 40 000 rows would fill the
    // server's lock table); the ids are unique anyway.
    await store.knex.raw(`alter table ${t} disable trigger user`);
    for (let day = 4; day >= 1; day -= 1) {
      const from = new Date(Math.floor((Date.now() - day * DAY) / DAY) * DAY);
      const to = new Date(from.getTime() + DAY);
      const name = store.names.table(`outbox_past${day}`);
      await store.knex.raw(
        `create table ${name} partition of ${t}
           for values from ('${from.toISOString()}') to ('${to.toISOString()}')`,
      );
      await store.knex.raw(
        `insert into ${t} (destination, partition_key, message_id, payload, status,
                           published_at, created_at)
         select 'plan', 'key-' || (g % 1000), 'd${day}-' || g, '\\x00'::bytea,
                case when g % 5000 = 0 then 'pending' else 'published' end,
                case when g % 5000 = 0 then null else now() end,
                ?::timestamptz + (g % 1000) * interval '1 second'
           from generate_series(1, 40000) as g`,
        [from.toISOString()],
      );
    }
    await store.knex.raw(
      `insert into ${t} (destination, partition_key, message_id, payload, status, published_at)
       select 'plan', case when g % 40 = 0 then null else 'key-' || (g % 1000) end,
              'now-' || g, '\\x00'::bytea,
              case when g % 4 = 0 then 'pending' else 'published' end,
              case when g % 4 = 0 then null else now() end
         from generate_series(1, 40000) as g`,
    );
    await store.knex.raw(`alter table ${t} enable trigger user`);
    await store.knex.raw(`analyze ${t}`);
    parentIndex = new Map(
      rowsOf<{ child: string; parent: string }>(
        await store.knex.raw(
          `select c.relname as child, p.relname as parent
             from pg_inherits i join pg_class c on c.oid = i.inhrelid
             join pg_class p on p.oid = i.inhparent
            where c.relkind = 'i' and p.relnamespace = to_regnamespace(?)`,
          [store.schema],
        ),
      ).map((r) => [r.child, r.parent]),
    );
    filled = new Set(
      rowsOf<{ name: string }>(
        await store.knex.raw(
          `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
            where i.inhparent = to_regclass(?) and c.reltuples > 0`,
          [t],
        ),
      ).map((r) => r.name),
    );
  }, 120_000);
  afterAll(async () => {
    await store.dispose();
  });

  /** Checks every plan of `sql` and resolves to the partitioned table's indexes it used. */
  async function indexesOf(sql: string, bindings: readonly Knex.RawBinding[]): Promise<string[]> {
    const used = new Set<string>();
    for (const steps of await plans(store, sql, bindings)) {
      const seq = steps.filter(
        (n) => n['Node Type'] === 'Seq Scan' && filled.has(n['Relation Name'] ?? ''),
      );
      expect(seq.map((n) => n['Relation Name'])).toEqual([]);
      for (const n of steps) {
        const name = n['Index Name'];
        if (name !== undefined) used.add(parentIndex.get(name) ?? name);
      }
    }
    return [...used];
  }

  it('has the partitions the test means: five with rows, the ones ahead and the default', () => {
    expect(filled.size).toBe(5);
  });

  it('claims through the pending partial indexes of each partition', async () => {
    for (const after of [null, '100']) {
      for (const lease of [false, true]) {
        const used = await indexesOf(
          claimSql(store.names, { lease, after: after !== null }),
          claimBindings({ limit: 200, window: 1_000, after, leaseMs: lease ? 30_000 : null }),
        );
        expect(used).toEqual(
          expect.arrayContaining([
            store.names.raw('outbox_pending_idx'),
            store.names.raw('outbox_pending_key_idx'),
            store.names.raw('outbox_pending_keyless_idx'),
          ]),
        );
      }
    }
  });

  it('claims a full batch', async () => {
    const result = await store.knex.transaction((trx) =>
      trx.raw(
        claimSql(store.names),
        claimBindings({ limit: 200, window: 1_000, after: null, leaseMs: null }),
      ),
    );
    expect(rowsOf(result)).toHaveLength(200);
  });

  it("walks keys and reads a key's followers through the pending key index", async () => {
    expect(
      await indexesOf(scanKeysSql(store.names, { cursor: true }), ['key-5', 1_000, [], 200]),
    ).toEqual(expect.arrayContaining([store.names.raw('outbox_pending_key_idx')]));
    const keys = Array.from({ length: 50 }, (_, k) => `key-${k}`);
    expect(await indexesOf(followersSql(store.names), [keys, keys.map(() => '0'), 800])).toEqual([
      store.names.raw('outbox_pending_key_idx'),
    ]);
  });

  it('marks by row id through the primary key of each partition', async () => {
    const t = store.names.table('outbox');
    const used = await indexesOf(
      `update ${t} set status = 'published', published_at = statement_timestamp()
        where id = any(?::bigint[]) and status = 'pending'`,
      ['{1,2,3}'],
    );
    expect(used.length).toBeGreaterThan(0);
    for (const index of used) {
      expect([store.names.raw('outbox_pkey'), store.names.raw('outbox_pending_idx')]).toContain(
        index,
      );
    }
  });

  it('cleans up through the published index, and status reads the pending and dead ones', async () => {
    expect(await indexesOf(deletePublishedSql(store.names), [0, 1000])).toEqual(
      expect.arrayContaining([store.names.raw('outbox_published_idx')]),
    );
    expect(await indexesOf(statusQueries(store.names).outbox, [])).toEqual(
      expect.arrayContaining([store.names.raw('outbox_pending_idx')]),
    );
  });
});
