import type { Knex } from 'knex';
import { rowsOf, type Store } from '../src';
import { claimBindings, claimSql } from '../src/relay/sql/claim';
import { deletePublishedSql } from '../src/relay/sql/cleanup';
import { followersSql } from '../src/relay/sql/followers';
import { scanKeysSql } from '../src/relay/sql/scan-keys';
import { openTestStore } from './db';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

/** The steps of an `explain (format json)` result, depth first. */
function planSteps<N extends { Plans?: N[] }>(result: unknown): N[] {
  const [row] = rowsOf<{ 'QUERY PLAN': Array<{ Plan: N }> }>(result);
  const flatten = (node: N): N[] => [node, ...(node.Plans ?? []).flatMap(flatten)];
  return flatten(row!['QUERY PLAN'][0]!.Plan);
}

async function plan(
  store: Store,
  sql: string,
  bindings: readonly Knex.RawBinding[],
): Promise<PlanNode[]> {
  return planSteps<PlanNode>(await store.knex.raw(`explain (format json) ${sql}`, bindings));
}

/** `value` as an SQL literal of unknown type, for `execute` arguments. */
function literal(value: Knex.RawBinding): string {
  if (value === null) return 'null';
  if (typeof value === 'number') return String(value);
  const quote = (text: string): string => `'${text.replace(/'/g, "''")}'`;
  if (Array.isArray(value)) {
    const items = (value as unknown[]).map(
      (item) => `"${String(item).replace(/[\\"]/g, (c) => `\\${c}`)}"`,
    );
    return quote(`{${items.join(',')}}`);
  }
  return quote(String(value));
}

/**
 * The plan PostgreSQL uses for `sql` run as a prepared statement once it has switched to a
 * generic plan (one planned without the bindings' values), as the relay's statements may
 * after a few runs (see `store/prepared.ts`).
 */
async function genericPlan(
  store: Store,
  sql: string,
  bindings: readonly Knex.RawBinding[],
): Promise<PlanNode[]> {
  return store.knex.transaction(async (trx) => {
    await trx.raw('set local plan_cache_mode = force_generic_plan');
    const native = trx
      .raw(sql, bindings as Knex.RawBinding[])
      .toSQL()
      .toNative();
    await trx.raw(`prepare justonce_plan_test as ${native.sql}`);
    try {
      return planSteps<PlanNode>(
        await trx.raw(
          `explain (format json) execute justonce_plan_test(${bindings.map(literal).join(', ')})`,
        ),
      );
    } finally {
      await trx.raw('deallocate justonce_plan_test');
    }
  });
}

describe('outbox poll query plan with a million rows (postgres)', () => {
  let store: Store & { dispose(): Promise<void> };
  beforeAll(async () => {
    // The fill is set up, not measured: a busy machine takes longer than the default
    // timeouts for its one statement.
    store = await openTestStore('postgres', {
      timeouts: { statementMs: 110_000, queryMs: 115_000 },
    });
    const t = store.names.table('outbox');
    // 990 000 published rows and 10 000 pending ones over 1 000 keys, in one statement.
    await store.knex.transaction(async (trx) => {
      await trx.raw(
        `insert into ${t} (destination, partition_key, message_id, payload, status, published_at)
         select 'plan', 'key-' || (g % 1000), 'm-' || g, '\\x00'::bytea,
                case when g > 990000 then 'pending' else 'published' end,
                case when g > 990000 then null else now() end
         from generate_series(1, 1000000) as g`,
      );
    });
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

  it.each([
    ['without', false, false],
    ['with the lease', true, false],
    ['with a sibling hint', false, true],
    ['with both', true, true],
  ])('keeps to them in the generic plan of a prepared claim, %s', async (_label, lease, after) => {
    const steps = await genericPlan(
      store,
      claimSql(store.names, { lease, after }),
      claimBindings({
        limit: 200,
        window: 1_000,
        after: after ? '990000' : null,
        leaseMs: lease ? 30_000 : null,
      }),
    );
    const outboxScans = steps.filter((n) => n['Relation Name'] === store.names.raw('outbox'));
    expect(outboxScans.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    const indexes = new Set(outboxScans.map((n) => n['Index Name']));
    expect(indexes).toContain(store.names.raw('outbox_pending_idx'));
    expect(indexes).toContain(store.names.raw('outbox_pending_key_idx'));
  });

  it('claims a full batch with the million rows present', async () => {
    const result = await store.knex.transaction((trx) => trx.raw(claimSql(store.names), request));
    expect(rowsOf(result)).toHaveLength(200);
  });

  it.each([
    ['planned per call', plan],
    ['in a generic plan', genericPlan],
  ])('walks keys through the pending key index, %s', async (_label, planOf) => {
    const steps = await planOf(store, scanKeysSql(store.names, { cursor: true }), [
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
    const steps = await plan(store, deletePublishedSql(store.names), [0, 1000]);
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
    const steps = planSteps<AnalyzedNode>(result);
    const byAge = steps.filter((n) => n['Index Name'] === store.names.raw('outbox_pending_idx'));
    expect(byAge.length).toBeGreaterThan(0);
    for (const scan of byAge) {
      expect(scan['Actual Rows'] * scan['Actual Loops']).toBeLessThanOrEqual(window);
    }
    // The oldest key's window events (200) fill the batch: the claim takes that key alone and
    // leaves the other four to other cycles and relays.
    const claimed = rowsOf<{ id: string | null; partition_key: string }>(
      await store.knex.transaction((trx) =>
        trx.raw(
          claimSql(store.names),
          claimBindings({ limit: 200, window, after: null, leaseMs: null }),
        ),
      ),
    );
    expect(claimed).toHaveLength(200);
    expect(new Set(claimed.map((r) => r.partition_key))).toEqual(new Set(['key-1']));
  });

  // A window from the first pending event holds every earlier event of its keys, so testing
  // each head against them would tell nothing more; and once events were published, each such
  // test walks the index entries of its key's published events, which stay until a vacuum
  // (with a visit to each row while any transaction may still see it).
  it("tests no head against its key's earlier events when the window starts at the first", async () => {
    const keyScans = async (after: string | null): Promise<PlanNode[]> =>
      (
        await analyzedSteps(
          store,
          claimSql(store.names, { after: after !== null }),
          claimBindings({ limit: 200, window: 1_000, after, leaseMs: null }),
        )
      ).filter((n) => n['Index Name'] === store.names.raw('outbox_pending_key_idx'));
    const earlier = (scans: PlanNode[]): PlanNode[] =>
      scans.filter((n) => !(n['Index Cond'] ?? '').includes('ROW('));
    // Only the followers' seeks, each after its head.
    expect(earlier(await keyScans(null))).toEqual([]);
    // A window that starts later may have cut a key's earlier events off: then it tests.
    expect(earlier(await keyScans('10')).length).toBeGreaterThan(0);
  });
});

interface AnalyzedNode extends PlanNode {
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: AnalyzedNode[];
}

/** The plan steps of `sql` as run, with their actual row counts. */
async function analyzedSteps(
  store: Store,
  sql: string,
  bindings: readonly Knex.RawBinding[],
): Promise<AnalyzedNode[]> {
  const result = await store.knex.transaction((trx) =>
    trx.raw(`explain (analyze, format json) ${sql}`, bindings),
  );
  return planSteps<AnalyzedNode>(result);
}

/** Outbox rows the steps on the outbox looked at: the ones they kept and the ones filtered out. */
function rowsLookedAt(store: Store, steps: readonly AnalyzedNode[]): number {
  return steps
    .filter((n) => n['Relation Name'] === store.names.raw('outbox'))
    .reduce(
      (sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops'],
      0,
    );
}

describe("reading a key's next events among many interleaved keys (postgres)", () => {
  let store: Store & { dispose(): Promise<void> };
  const KEYS = 50;
  beforeAll(async () => {
    store = await openTestStore('postgres');
    // 20 000 pending events dealt round-robin over 50 keys, then one event of a rare key.
    const t = store.names.table('outbox');
    await store.knex.raw(
      `insert into ${t} (destination, partition_key, message_id, payload)
       select 'many', 'key-' || (g % ${KEYS}), 'm-' || g, '\\x00'::bytea
       from generate_series(1, 20000) as g`,
    );
    await store.knex.raw(
      `insert into ${t} (destination, partition_key, message_id, payload)
       values ('many', 'rare', 'm-rare', '\\x00'::bytea)`,
    );
    await store.knex.raw(`analyze ${t}`);
  }, 120_000);
  afterAll(async () => {
    await store.dispose();
  });

  // Walking the table in id order and filtering by key would look at every event of the
  // other keys in between: tens of thousands of rows for the rare key alone.
  it('seeks each key in the pending key index: the followers read looks only at what it returns', async () => {
    const keys = [...Array.from({ length: KEYS }, (_, k) => `key-${k}`), 'rare'];
    const limit = 16 * keys.length;
    const steps = await analyzedSteps(store, followersSql(store.names), [
      keys,
      keys.map(() => '0'),
      limit,
    ]);
    const returned = steps[0]!['Actual Rows'];
    expect(returned).toBe(KEYS * 16 + 1);
    // A scan may read a row past its key's share; nothing like the rows in between.
    expect(rowsLookedAt(store, steps)).toBeLessThanOrEqual(2 * returned);
    expect(
      steps
        .filter((n) => n['Relation Name'] === store.names.raw('outbox'))
        .map((n) => n['Index Name']),
    ).toEqual([store.names.raw('outbox_pending_key_idx')]);
  });

  it('reads followers through the pending key index alone in a generic plan', async () => {
    const keys = Array.from({ length: KEYS }, (_, k) => `key-${k}`);
    const steps = await genericPlan(store, followersSql(store.names), [
      keys,
      keys.map(() => '0'),
      800,
    ]);
    const outboxScans = steps.filter((n) => n['Relation Name'] === store.names.raw('outbox'));
    expect(outboxScans.map((n) => n['Index Name'])).toEqual([
      store.names.raw('outbox_pending_key_idx'),
    ]);
  });

  it("seeks each head's followers in the pending key index when it claims", async () => {
    const steps = await analyzedSteps(
      store,
      claimSql(store.names),
      claimBindings({ limit: 200, window: 1_000, after: null, leaseMs: null }),
    );
    const followers = steps.filter(
      (n) =>
        n['Relation Name'] === store.names.raw('outbox') &&
        n['Index Name'] === store.names.raw('outbox_pending_key_idx') &&
        (n['Rows Removed by Filter'] ?? 0) === 0,
    );
    expect(followers.length).toBeGreaterThan(0);
    // Only the window scan walks the id index; it looks at the window and no further.
    for (const scan of steps.filter(
      (n) => n['Index Name'] === store.names.raw('outbox_pending_idx'),
    )) {
      expect(scan['Actual Rows'] * scan['Actual Loops']).toBeLessThanOrEqual(1_000);
      expect(scan['Rows Removed by Filter'] ?? 0).toBe(0);
    }
  });

  it("finds each walked key's head by seeking it in the pending key index", async () => {
    const steps = await analyzedSteps(store, scanKeysSql(store.names, { cursor: false }), [
      KEYS + 1,
      [],
      200,
    ]);
    const heads = steps[0]!['Actual Rows'];
    expect(heads).toBe(KEYS + 1);
    // The walk descends once per key, the head lookups once per key, the lock once per head.
    expect(rowsLookedAt(store, steps)).toBeLessThanOrEqual(4 * (KEYS + 1));
  });
});
