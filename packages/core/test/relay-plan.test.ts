import { rowsOf, type Store } from '../src';
import { claimSql } from '../src/relay/sql/claim';
import { openTestStore } from './db';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

async function plan(
  store: Store,
  sql: string,
  bindings: readonly (string | number)[],
): Promise<PlanNode[]> {
  const result = await store.knex.raw(`explain (format json) ${sql}`, bindings);
  const [row] = rowsOf<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(result);
  return nodes(row!['QUERY PLAN'][0]!.Plan);
}

describe('outbox poll query plan with a million rows (postgres)', () => {
  let store: Store & { dispose(): Promise<void> };
  beforeAll(async () => {
    store = await openTestStore('postgres');
    const t = store.names.table('outbox');
    // 990 000 published rows and 10 000 pending ones over 1 000 keys, in one statement.
    await store.knex.raw(
      `insert into ${t} (destination, partition_key, message_id, payload, status, published_at)
       select 'plan', 'key-' || (g % 1000), 'm-' || g, '\\x00'::bytea,
              case when g > 990000 then 'pending' else 'published' end,
              case when g > 990000 then null else now() end
       from generate_series(1, 1000000) as g`,
    );
    await store.knex.raw(`analyze ${t}`);
  }, 120_000);
  afterAll(async () => {
    await store.dispose();
  });

  it('claims through the pending partial indexes, never a sequential scan', async () => {
    const steps = await plan(store, claimSql(store.names), [200, 200, 200, 200]);
    const outboxScans = steps.filter((n) => n['Relation Name'] === store.names.raw('outbox'));
    expect(outboxScans.length).toBeGreaterThan(0);
    expect(outboxScans.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    const indexes = new Set(outboxScans.map((n) => n['Index Name']));
    expect(indexes).toContain(store.names.raw('outbox_pending_idx'));
    expect(indexes).toContain(store.names.raw('outbox_pending_key_idx'));
    expect(indexes).toContain(store.names.raw('outbox_pending_keyless_idx'));
  });

  it('claims a batch quickly with the million rows present', async () => {
    const started = Date.now();
    const result = await store.knex.transaction((trx) =>
      trx.raw(claimSql(store.names), [200, 200, 200, 200]),
    );
    expect(rowsOf(result)).toHaveLength(200);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('cleans up through the published index', async () => {
    const t = store.names.table('outbox');
    const steps = await plan(
      store,
      `delete from ${t} where id in (
         select id from ${t} where status = 'published'
           and published_at < statement_timestamp() - ? * interval '1 millisecond'
         order by published_at limit ? for update skip locked)`,
      [0, 1000],
    );
    const indexes = steps.map((n) => n['Index Name']).filter(Boolean);
    expect(indexes).toContain(store.names.raw('outbox_published_idx'));
  });
});
