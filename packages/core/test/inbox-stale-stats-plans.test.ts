/**
 * The inbox's reads by key while the planner's statistics are stale: the tables were
 * analysed empty (a fresh schema, a truncate), then filled faster than autovacuum analyses
 * them. Each read must still probe the primary key with the whole key, per message: a read
 * that also tests `status = 'SUCCEEDED'` let the planner pick the partial index of handled
 * records and scan every record of the consumer for each message, a batch's read then cost
 * more for every row in the table. (hot-query-plans.test.ts checks the same statements with
 * a million analysed rows.)
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createInbox, type Envelope } from '../src';
import { databaseUrl, openTestStore } from './db';

let caught: string[] | undefined;
// Before any store connects: the store binds each new connection's `query` as it finds it.
const pgProto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
const pgQuery = pgProto.query;
pgProto.query = function query(this: unknown, ...args: unknown[]) {
  const [first] = args;
  if (typeof first === 'string') caught?.push(first);
  else if (typeof first === 'object' && first !== null && 'text' in first) {
    caught?.push(String((first as { text: unknown }).text));
  }
  return pgQuery.apply(this, args);
};

const CONSUMER = 'stale-stats';
const HANDLED = 5_000;

interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Relation Name'?: string;
  readonly 'Index Name'?: string;
  readonly 'Index Cond'?: string;
  readonly Plans?: readonly PlanNode[];
}

function* nodes(plan: PlanNode): Generator<PlanNode> {
  yield plan;
  for (const child of plan.Plans ?? []) yield* nodes(child);
}

/** Scans of the inbox's tables that do not look a message up by its whole key. */
function wideScans(plan: PlanNode): string[] {
  const wide: string[] = [];
  for (const node of nodes(plan)) {
    const table = node['Relation Name'];
    if (table !== 'inbox_records' && table !== 'inbox_attempts') continue;
    if (node['Node Type'] === 'ModifyTable') continue;
    const cond = node['Index Cond'] ?? '';
    if (!cond.includes('message_id') || !cond.includes('scope')) {
      wide.push(`${node['Node Type']} on ${table} via ${node['Index Name'] ?? '-'} (${cond})`);
    }
  }
  return wide;
}

// Counted deliveries: the batch reads its records first, then counts the others.
const envelope = (id: string): Envelope => ({
  id,
  headers: {},
  body: '{}',
  delivery: { redelivered: true },
});

it('probes the primary key per message in every read of a batch, with stale statistics', async () => {
  const store = await openTestStore('postgres');
  const admin = new Client({ connectionString: databaseUrl() });
  await admin.connect();
  try {
    const records = store.names.table('inbox_records');
    const attempts = store.names.table('inbox_attempts');
    await admin.query(`alter table ${records} set (autovacuum_enabled = false)`);
    await admin.query(`alter table ${attempts} set (autovacuum_enabled = false)`);
    await admin.query(`analyze ${records}; analyze ${attempts}`);
    await admin.query(
      `insert into ${records} (consumer, scope, message_id, status, attempts, expires_at)
       select $1, 'default', 'old-' || g, 'SUCCEEDED', 1, now() + interval '1 day'
         from generate_series(1, ${HANDLED}) g`,
      [CONSUMER],
    );
    // Counters of messages still being retried, as a busy consumer has.
    await admin.query(
      `insert into ${attempts} (scope, consumer, message_id, attempts, open_since, open_pid)
       select 'default', $1, 'retried-' || g, 1, now(), 0 from generate_series(1, ${HANDLED}) g`,
      [CONSUMER],
    );
    const inbox = createInbox({ store, consumer: CONSUMER });
    const batch = Array.from({ length: 100 }, (_, i) =>
      envelope(i % 2 === 0 ? `old-${i + 1}` : randomUUID()),
    );
    caught = [];
    await inbox.processBatch(batch, async () => undefined);
    const reads = caught.filter(
      (text) =>
        /^\s*(with|select)/i.test(text) && (text.includes(records) || text.includes(attempts)),
    );
    caught = undefined;
    expect(reads.length).toBeGreaterThan(0);
    const problems: string[] = [];
    for (const text of reads) {
      // The plan of the statement as the store sends it: its parameters left open, so the
      // planner answers as for a prepared statement's generic plan.
      await admin.query('begin');
      await admin.query(`set local plan_cache_mode = force_generic_plan`);
      const name = `probe_${problems.length}_${Math.random().toString(36).slice(2)}`;
      await admin.query(`prepare ${name} as ${text}`);
      const count = Math.max(0, ...(text.match(/\$\d+/g) ?? []).map((p) => Number(p.slice(1))));
      const args = Array.from({ length: count }, () => 'null').join(', ');
      const { rows } = await admin.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
        `explain (format json) execute ${name}${args.length > 0 ? `(${args})` : ''}`,
      );
      await admin.query('rollback');
      for (const wide of wideScans(rows[0]!['QUERY PLAN'][0]!.Plan)) {
        problems.push(`${wide} in: ${text.replace(/\s+/g, ' ').slice(0, 160)}`);
      }
    }
    expect(problems).toEqual([]);
  } finally {
    caught = undefined;
    await admin.end();
    await store.dispose();
  }
});
