import type { Knex } from 'knex';
import { rowsOf, type Store } from '../src';
import { claimBindings, claimSql } from '../src/relay/sql/claim';
import { scanKeysSql } from '../src/relay/sql/scan-keys';
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
  bindings: readonly Knex.RawBinding[],
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

  const request = claimBindings({ limit: 200, window: 1_000, after: null, leaseMs: null });

  it('claims through the pending partial indexes, never a sequential scan', async () => {
    const steps = await plan(store, claimSql(store.names), request);
    const outboxScans = steps.filter((n) => n['Relation Name'] === store.names.raw('outbox'));
    expect(outboxScans.length).toBeGreaterThan(0);
    expect(outboxScans.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    const indexes = new Set(outboxScans.map((n) => n['Index Name']));
    expect(indexes).toContain(store.names.raw('outbox_pending_idx'));
    expect(indexes).toContain(store.names.raw('outbox_pending_key_idx'));
    expect(indexes).toContain(store.names.raw('outbox_pending_keyless_idx'));
  });

  it('claims a full batch with the million rows present', async () => {
    const result = await store.knex.transaction((trx) => trx.raw(claimSql(store.names), request));
    expect(rowsOf(result)).toHaveLength(200);
  });

  it('walks keys through the pending key index', async () => {
    const steps = await plan(store, scanKeysSql(store.names, { cursor: true }), [
      'key-5',
      1_000,
      [],
      200,
    ]);
    const outboxScans = steps.filter((n) => n['Relation Name'] === store.names.raw('outbox'));
    expect(outboxScans.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    expect(new Set(outboxScans.map((n) => n['Index Name']))).toContain(
      store.names.raw('outbox_pending_key_idx'),
    );
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

describe('claim work with a deep backlog on few keys (postgres)', () => {
  let store: Store & { dispose(): Promise<void> };
  beforeAll(async () => {
    store = await openTestStore('postgres');
    // 100 000 pending events over 5 keys: every key's queue is 20 000 deep.
    await store.knex.raw(
      `insert into ${store.names.table('outbox')} (destination, partition_key, message_id, payload)
       select 'deep', 'key-' || (g % 5), 'm-' || g, '\\x00'::bytea
       from generate_series(1, 100000) as g`,
    );
    await store.knex.raw(`analyze ${store.names.table('outbox')}`);
  }, 120_000);
  afterAll(async () => {
    await store.dispose();
  });

  it('tests at most the window of oldest events for head-ness, not the whole backlog', async () => {
    const window = 1_000;
    const result = await store.knex.raw(
      `explain (analyze, format json) ${claimSql(store.names)}`,
      claimBindings({ limit: 200, window, after: null, leaseMs: null }),
    );
    const [row] = rowsOf<{ 'QUERY PLAN': Array<{ Plan: AnalyzedNode }> }>(result);
    const steps = analyzed(row!['QUERY PLAN'][0]!.Plan);
    const byAge = steps.filter((n) => n['Index Name'] === store.names.raw('outbox_pending_idx'));
    expect(byAge.length).toBeGreaterThan(0);
    for (const scan of byAge) {
      expect(scan['Actual Rows'] * scan['Actual Loops']).toBeLessThanOrEqual(window);
    }
    // Every key's head, and followers up to the batch.
    const claimed = rowsOf<{ id: string | null; partition_key: string }>(
      await store.knex.transaction((trx) =>
        trx.raw(
          claimSql(store.names),
          claimBindings({ limit: 200, window, after: null, leaseMs: null }),
        ),
      ),
    );
    expect(claimed).toHaveLength(200);
    expect(new Set(claimed.map((r) => r.partition_key)).size).toBe(5);
  });
});

interface AnalyzedNode extends PlanNode {
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: AnalyzedNode[];
}

function analyzed(plan: AnalyzedNode): AnalyzedNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(analyzed)];
}
