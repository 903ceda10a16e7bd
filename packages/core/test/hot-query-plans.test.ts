/**
 * The plans of the hot statements with a million rows in each big table (`inbox_records`,
 * `idempotency`, `inbox_attempts`, `outbox`), filled set-based as `pnpm bench growth` fills
 * them (test-support/growth-fill.ts). The statements are not copies: each case runs the
 * public API once and every statement it sends through node-postgres is caught at the driver
 * (`Client.prototype.query`, wrapped before the store connects), then explained as planned
 * for the values it was sent with and, when it went as a named prepared statement, also as
 * the generic plan PostgreSQL switches such a statement to after a few runs. No plan may read
 * a big table with a sequential scan, and each case's plans must use the indexes named for
 * it. The fill takes most of the file's time (a minute or two on a loaded 2-core machine).
 *
 * The relay's claim has its own deeper checks in relay-plan.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import {
  createInbox,
  createMemoryPublisher,
  createOperations,
  createOutbox,
  createRelay,
  createRetention,
  type Envelope,
  type Store,
} from '../src';
import { createAdmin, statusQueries } from '../src/admin';
import { addStaleRows, fillTo, RETENTION_MS } from '../../../test-support/growth-fill';
import { databaseUrl, openTestStore } from './db';

/** A statement as node-postgres was asked to send it. */
interface Sent {
  readonly text: string;
  readonly values: readonly unknown[];
  /** Sent as a named prepared statement, which PostgreSQL may run with a generic plan. */
  readonly prepared: boolean;
}

let caught: Sent[] | undefined;
// Before any store connects: the store binds each new connection's `query` as it finds it.
const pgProto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
const pgQuery = pgProto.query;
pgProto.query = function query(this: unknown, ...args: unknown[]) {
  const [first, second] = args;
  if (typeof first === 'string') {
    caught?.push({ text: first, values: Array.isArray(second) ? second : [], prepared: false });
  } else if (typeof first === 'object' && first !== null && 'text' in first) {
    const config = first as { text: unknown; values?: unknown; name?: unknown };
    caught?.push({
      text: String(config.text),
      values: Array.isArray(config.values) ? config.values : [],
      prepared: typeof config.name === 'string',
    });
  }
  return pgQuery.apply(this, args);
};

/** The statements `work` sends. */
async function statementsOf(work: () => Promise<unknown>): Promise<Sent[]> {
  caught = [];
  try {
    await work();
    return caught;
  } finally {
    caught = undefined;
  }
}

/** One step of a plan, as `explain (format json)` gives it. */
interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Relation Name'?: string;
  readonly 'Index Name'?: string;
  readonly 'Conflict Arbiter Indexes'?: readonly string[];
  readonly Plans?: readonly PlanNode[];
}

function steps(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(steps)];
}

function planOf(rows: ReadonlyArray<Record<string, unknown>>): PlanNode[] {
  const [row] = rows as Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>;
  return steps(row!['QUERY PLAN'][0]!.Plan);
}

/** `value` as an SQL literal of unknown type, for `execute` arguments. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const quote = (text: string): string => `'${text.replace(/'/g, "''")}'`;
  if (value instanceof Date) return quote(value.toISOString());
  if (Array.isArray(value)) {
    const items = value.map((item: unknown) =>
      item === null ? 'NULL' : `"${String(item).replace(/[\\"]/g, (c) => `\\${c}`)}"`,
    );
    return quote(`{${items.join(',')}}`);
  }
  return quote(String(value));
}

/**
 * The plans PostgreSQL may run a statement with: the one it makes for the values sent, and
 * for a prepared statement also the generic one (no values) it switches to once it finds it
 * no worse.
 */
async function plansOf(client: Client, sent: Sent): Promise<PlanNode[][]> {
  const custom = planOf(
    (await client.query(`explain (format json) ${sent.text}`, sent.values as unknown[])).rows,
  );
  if (!sent.prepared) return [custom];
  await client.query('begin');
  try {
    await client.query('set local plan_cache_mode = force_generic_plan');
    await client.query(`prepare hot_plan_check as ${sent.text}`);
    const generic = planOf(
      (
        await client.query(
          `explain (format json) execute hot_plan_check(${sent.values.map(literal).join(', ')})`,
        )
      ).rows,
    );
    return [custom, generic];
  } finally {
    await client.query('rollback');
    // A prepared statement outlives the transaction it was made in.
    await client.query('deallocate all');
  }
}

const BIG = ['inbox_records', 'idempotency', 'inbox_attempts', 'outbox'] as const;
const ROWS = 1_000_000;

describe('hot statements with a million rows in each big table (postgres)', () => {
  let store: Store & { dispose(): Promise<void> };
  let client: Client;
  beforeAll(async () => {
    store = await openTestStore('postgres');
    await fillTo(databaseUrl(), store, 0, ROWS, {
      tables: BIG,
      concurrent: true,
      log: () => undefined,
    });
    client = new Client({ connectionString: databaseUrl() });
    await client.connect();
  }, 300_000);
  afterAll(async () => {
    await client?.end();
    await store?.dispose();
    pgProto.query = pgQuery;
  });

  /**
   * The statements of `work` that read or write a big table, each once; every one of their
   * plans is free of sequential scans of big tables, but for those `tolerated` names for a
   * statement. Resolves to the indexes the plans use (scans and `on conflict` arbiters), by
   * raw name.
   */
  async function indexesUsed(
    work: () => Promise<unknown>,
    tolerated: (text: string) => readonly string[] = () => [],
  ): Promise<Set<string>> {
    const tables = BIG.map((t) => store.names.table(t));
    const seen = new Set<string>();
    const indexes = new Set<string>();
    const sent = (await statementsOf(work)).filter(
      (s) =>
        /^\s*(select|insert|update|delete|with)\b/i.test(s.text) &&
        tables.some((t) => s.text.includes(t)),
    );
    expect(sent.length).toBeGreaterThan(0);
    for (const s of sent) {
      if (seen.has(s.text)) continue;
      seen.add(s.text);
      const big = new Set<string>(
        BIG.filter((t) => !tolerated(s.text).includes(t)).map((t) => store.names.raw(t)),
      );
      for (const plan of await plansOf(client, s)) {
        const scans = plan.filter(
          (n) => n['Node Type'] === 'Seq Scan' && big.has(n['Relation Name'] ?? ''),
        );
        expect({ statement: s.text, scans }).toEqual({ statement: s.text, scans: [] });
        for (const n of plan) {
          if (n['Index Name'] !== undefined) indexes.add(n['Index Name']);
          for (const arbiter of n['Conflict Arbiter Indexes'] ?? []) indexes.add(arbiter);
        }
      }
    }
    return indexes;
  }

  const expectIndexes = (used: Set<string>, names: readonly string[]): void => {
    expect([...used].sort()).toEqual(expect.arrayContaining(names.map((n) => store.names.raw(n))));
  };

  const delivery = (id: string, redelivered = false): Envelope => ({
    id,
    headers: {},
    body: JSON.stringify({ id }),
    delivery: redelivered
      ? { attempt: 2, receiveCount: 2, redelivered: true }
      : { attempt: 1, receiveCount: 1, redelivered: false },
  });
  const noop = async (): Promise<void> => undefined;
  const inbox = () => createInbox({ store, consumer: 'consumer-3', retentionMs: RETENTION_MS });

  it('inbox: a first delivery claims with one insert that reads no table', async () => {
    const used = await indexesUsed(() => inbox().process(delivery(randomUUID()), noop));
    // `on conflict do nothing` checks the unique index without a scan in the plan; a named
    // conflict target shows as its arbiter.
    for (const index of used) expect(index).toBe(store.names.raw('inbox_records_pkey'));
  });

  it('inbox: a redelivery counts its attempt and clears it through the primary keys', async () => {
    const used = await indexesUsed(() => inbox().process(delivery(randomUUID(), true), noop));
    expectIndexes(used, ['inbox_records_pkey', 'inbox_attempts_pkey']);
  });

  it('inbox: a duplicate of a handled message reads its record by key', async () => {
    const id = randomUUID();
    await inbox().process(delivery(id), noop);
    const used = await indexesUsed(async () => {
      await inbox().process(delivery(id), noop);
      await inbox().process(delivery(id, true), noop);
    });
    expectIndexes(used, ['inbox_records_pkey']);
  });

  it('inbox: batches read, count and claim through the primary keys', async () => {
    const handled = Array.from({ length: 20 }, () => randomUUID());
    await inbox().processBatch(
      handled.map((id) => delivery(id)),
      noop,
    );
    const used = await indexesUsed(async () => {
      const fresh = Array.from({ length: 80 }, () => randomUUID());
      await inbox().processBatch(
        fresh.map((id) => delivery(id)),
        noop,
      );
      await inbox().processBatch(
        [...handled, ...fresh.slice(0, 10), randomUUID()].map((id) => delivery(id, true)),
        noop,
      );
    });
    expectIndexes(used, ['inbox_records_pkey', 'inbox_attempts_pkey']);
  });

  it('operations: reserve, finalize, replay and read by the primary key, alone and grouped', async () => {
    const ops = createOperations({ store, operation: 'op-3', retentionMs: RETENTION_MS });
    const effect = () => Promise.resolve({ ok: true });
    const used = await indexesUsed(async () => {
      const key = randomUUID();
      await ops.run(key, { key }, effect);
      await ops.run(key, { key }, effect);
      await ops.get(key);
      // Calls made at once are grouped into one statement over arrays.
      await Promise.all(Array.from({ length: 10 }, (_, i) => ops.run(randomUUID(), { i }, effect)));
      const reservation = await ops.reserve(randomUUID(), {});
      if (reservation.kind !== 'acquired') throw new Error(reservation.kind);
      await ops.fail(reservation.ref, new Error('declined'), { retriable: true });
    });
    expectIndexes(used, ['idempotency_pkey']);
  });

  it('relay: a cycle claims and marks through the pending indexes', async () => {
    const outbox = createOutbox({ store, notify: false });
    await store.knex.transaction((trx) =>
      outbox.add(
        trx,
        Array.from({ length: 20 }, (_, i) => ({
          destination: 'plans',
          key: i % 2 === 0 ? `key-${i}` : undefined,
          payload: { i },
        })),
      ),
    );
    const publisher = createMemoryPublisher();
    const used = await indexesUsed(async () => {
      const relay = createRelay({ store, publisher, notify: false, onPublished: 'keep' });
      await relay.start();
      await publisher.waitForCount(20);
      await relay.stop();
    });
    expectIndexes(used, ['outbox_pending_idx']);
  });

  it('retention: each batch finds its stale rows through the age indexes', async () => {
    await addStaleRows(store, 'plans', 50);
    const retention = createRetention({ store, retentionMs: RETENTION_MS });
    const used = await indexesUsed(() => retention.runOnce());
    expectIndexes(used, [
      'idempotency_expires_at_idx',
      'inbox_records_expires_at_idx',
      'inbox_attempts_last_attempt_at_idx',
    ]);
  });

  /**
   * The status statement that counts the published outbox rows, among other things: allowed to
   * scan the outbox, since nearly every row kept is a published one and the count stops at
   * `STATUS_COUNT_LIMIT` rows, so a scan reads no more than that whatever the table's size.
   */
  const countsPublished = (text: string): readonly string[] =>
    text === statusQueries(store.names).retention ? ['outbox'] : [];

  it("status: every figure reads through the partial indexes, never the tables' bulk", async () => {
    const used = await indexesUsed(() => createAdmin(store).status(), countsPublished);
    expectIndexes(used, [
      'outbox_pending_idx',
      'outbox_dead_idx',
      'inbox_records_succeeded_created_idx',
      'idempotency_succeeded_created_idx',
      'idempotency_in_progress_idx',
      'inbox_records_expires_at_idx',
      'idempotency_expires_at_idx',
    ]);
  });
});
