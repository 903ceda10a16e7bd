/**
 * `status()` at scale: a million outbox rows (nearly all published, as a relay that keeps
 * them leaves them), half a million operation records, a quarter million inbox records, two
 * hundred thousand dead letters and a week of per-minute activity of fifty consumers (half a
 * million rows).
 * Rows are inserted with one `generate_series` statement per table: the real APIs would take
 * minutes to write this many. Every status statement must be read through an index (no
 * sequential scan of any table), and the test prints each plan and how long status() took.
 */
import { createAdmin, rowsOf, statusQueries, type StatusQueryName } from '../src';
import { STATUS_COUNT_LIMIT } from '../src/admin';
import { CLEANUP_TARGETS } from '../src/retention/targets';
import { Client } from 'pg';
import { databaseUrl, openTestStore } from './db';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

const OUTBOX_ROWS = 1_000_000;
const DEDUP_ROWS = 500_000;
const INBOX_RECORDS = 250_000;
const DEAD_LETTERS = 200_000;
const ACTIVITY_CONSUMERS = 50;
const ACTIVITY_MINUTES = 7 * 24 * 60;

/** Fills the three tables; each statement is one `insert … select … generate_series`. */
async function fill(store: TestStore): Promise<void> {
  // A connection of its own: the store's connections carry a statement timeout sized for its
  // own statements, which a million-row insert on a busy machine can outlast.
  const client = new Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    await fillWith(client, store.names);
  } finally {
    await client.end();
  }
}

async function fillWith(db: Client, names: TestStore['names']): Promise<void> {
  // Every 1000th row pending, the next one dead, the rest published over the last day.
  await db.query(
    `insert into ${names.table('outbox')}
       (destination, partition_key, message_id, headers, payload, created_at, available_at,
        attempts, last_error, status, published_at)
     select 'dest-' || ((i / 1000) % 20), 'key-' || (i % 5000), 'm-' || i, '{}'::jsonb,
            convert_to('{"n":' || i || '}', 'UTF8'),
            now() - ((${OUTBOX_ROWS} - i) * interval '80 milliseconds'),
            now() - ((${OUTBOX_ROWS} - i) * interval '80 milliseconds'),
            case when i % 1000 = 1 then 10 else 0 end,
            case when i % 1000 = 1 then 'broker says no' end,
            case i % 1000 when 0 then 'pending' when 1 then 'dead' else 'published' end,
            case when i % 1000 > 1
                 then now() - ((${OUTBOX_ROWS} - i) * interval '80 milliseconds') end
       from generate_series(1, ${OUTBOX_ROWS}) as i`,
  );
  // Records over the last week across 50 operations; every 5000th in progress (half of them
  // past their lease), every 100th past its expiry.
  await db.query(
    `insert into ${names.table('idempotency')}
       (scope, operation, key, request_hash, status, owner_id, lease_until, attempts,
        created_at, updated_at, expires_at)
     select 'default', 'op-' || ((i / 7) % 50), 'k-' || i, md5(i::text),
            case when i % 5000 = 0 then 'IN_PROGRESS' else 'SUCCEEDED' end,
            case when i % 5000 = 0 then 'owner-' || i end,
            case when i % 5000 = 0
                 then now() + case when i % 10000 = 0 then interval '-1 minute'
                                   else interval '10 minutes' end end,
            1, now() - (i * interval '1.2 seconds'), now() - (i * interval '1.2 seconds'),
            now() - (i * interval '1.2 seconds')
              + case when i % 100 = 0 then interval '1 second' else interval '7 days' end
       from generate_series(1, ${DEDUP_ROWS}) as i`,
  );
  // Inbox records of 20 consumers over the last week, one every 2.4 s, every 50th
  // dead-lettered, every 100th past its expiry.
  await db.query(
    `insert into ${names.table('inbox_records')}
       (consumer, scope, message_id, status, fingerprint, attempts, created_at, expires_at)
     select 'inbox-' || (i % 20), 'default', 'm-' || i,
            case when i % 50 = 0 then 'FAILED_FINAL' else 'SUCCEEDED' end, md5(i::text), 1, now() - (i * interval '2.4 seconds'),
            now() - (i * interval '2.4 seconds')
              + case when i % 100 = 0 then interval '1 second' else interval '7 days' end
       from generate_series(1, ${INBOX_RECORDS}) as i`,
  );
  // Dead letters of 10 consumers; all but every 100th already requeued.
  await db.query(
    `insert into ${names.table('dead_letters')}
       (scope, consumer, message_id, dedupe, fingerprint, reason, error_code, error_message,
        attempts, partition_key, headers, body, body_is_text, delivery, dead_at, requeued_at)
     select 'default', 'consumer-' || (i % 10), 'dl-' || i, true, md5(i::text),
            case when i % 3 = 0 then 'NON_RETRIABLE' else 'MAX_ATTEMPTS' end, 'E', 'failed', 3,
            null, '{}'::jsonb, '\\x00'::bytea, false, '{}'::jsonb,
            now() - (i * interval '3 seconds'),
            case when i % 100 <> 0 then now() - (i * interval '2 seconds') end
       from generate_series(1, ${DEAD_LETTERS}) as i`,
  );
  // A week of minutes of 50 consumers, each minute with 2 handled, 1 duplicate and, every
  // tenth minute, 1 dead letter (minute 0 is the current one).
  await db.query(
    `insert into ${names.table('consumer_activity')}
       (consumer, minute, handled, duplicates, dead_lettered)
     select 'consumer-' || c, date_trunc('minute', now()) - m * interval '1 minute', 2, 1,
            case when m % 10 = 0 then 1 else 0 end
       from generate_series(0, ${ACTIVITY_CONSUMERS - 1}) as c,
            generate_series(0, ${ACTIVITY_MINUTES - 1}) as m`,
  );
  // What autovacuum does in production: statistics, and the visibility map for index-only scans.
  for (const table of [
    'outbox',
    'idempotency',
    'inbox_records',
    'dead_letters',
    'consumer_activity',
  ]) {
    await db.query(`vacuum analyze ${names.table(table)}`);
  }
}

describe('status() at a million outbox rows (PostgreSQL)', () => {
  let store: TestStore;
  let filledAt = 0;

  beforeAll(async () => {
    store = await openTestStore('postgres');
    const started = performance.now();
    filledAt = Date.now();
    await fill(store);
    process.stdout.write(
      `admin-volume: filled ${OUTBOX_ROWS} outbox rows, ${DEDUP_ROWS} operation records, ` +
        `${INBOX_RECORDS} inbox records, ` +
        `${DEAD_LETTERS} dead letters and ${ACTIVITY_CONSUMERS * ACTIVITY_MINUTES} activity ` +
        `rows in ${Math.round(performance.now() - started)} ms\n`,
    );
  }, 120_000);
  afterAll(async () => {
    await store.dispose();
  });

  it('reads every status figure through indexes, fast', async () => {
    const admin = createAdmin(store);
    await admin.status(); // warm the connections and the cache, as a running CLI would
    const started = performance.now();
    const status = await admin.status();
    const ms = performance.now() - started;

    expect(status.outbox).toHaveLength(20);
    expect(status.outbox.reduce((n, d) => n + d.pending, 0)).toBe(OUTBOX_ROWS / 1000);
    expect(status.outbox.reduce((n, d) => n + d.dead, 0)).toBe(OUTBOX_ROWS / 1000);
    // 998 000 published rows: the count stops at its limit rather than read them all.
    expect(status.retention.publishedOutboxRows).toBe(STATUS_COUNT_LIMIT);
    expect(status.deadLetters.reduce((n, d) => n + d.count, 0)).toBe(DEAD_LETTERS / 100);
    expect(status.operations.reduce((n, o) => n + o.inProgress + o.pastLease, 0)).toBe(
      DEDUP_ROWS / 5000,
    );
    expect(status.operations.reduce((n, o) => n + o.pastLease, 0)).toBe(DEDUP_ROWS / 10000);
    // One operation record every 1.2 s: about 3000 in the last hour; one inbox record every
    // 2.4 s, 2% of them dead-lettered: about 1470.
    const lastHour = (prefix: string): number =>
      status.consumers
        .filter((c) => c.name.startsWith(prefix))
        .reduce((n, c) => n + c.handledLastHour, 0);
    expect(lastHour('op-')).toBeGreaterThan(2900);
    expect(lastHour('op-')).toBeLessThan(3000);
    expect(lastHour('inbox-')).toBeGreaterThan(1400);
    expect(lastHour('inbox-')).toBeLessThan(1500);
    expect(status.retention.expiredDedupRecords).toBeGreaterThan(0);
    // Minutes 0 to 60 (the current one is partial) of each consumer: 61 duplicates, 7 dead;
    // a minute fewer for each minute boundary the clock may have crossed since the fill began.
    const since = Math.ceil((Date.now() - filledAt) / 60_000);
    const active = status.consumers.filter((c) => c.name.startsWith('consumer-'));
    expect(active).toHaveLength(ACTIVITY_CONSUMERS);
    for (const c of active) {
      expect(c.duplicatesLastHour).toBeGreaterThanOrEqual(60 - since);
      expect(c.duplicatesLastHour).toBeLessThanOrEqual(61);
      expect(c.deadLetteredLastHour).toBeGreaterThanOrEqual(6 - since);
      expect(c.deadLetteredLastHour).toBeLessThanOrEqual(7);
      expect(c.handledLastHour).toBe(0);
    }

    const report: string[] = [`admin-volume: status() took ${ms.toFixed(1)} ms`];
    const queries = statusQueries(store.names);
    for (const name of Object.keys(queries) as StatusQueryName[]) {
      const result = await store.knex.raw(`explain (analyze, costs off) ${queries[name]}`);
      const plan = rowsOf<{ 'QUERY PLAN': string }>(result)
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      report.push(`--- ${name}\n${plan}`);
      // The published count may scan the outbox: nearly all of it is published rows, and the
      // count stops at STATUS_COUNT_LIMIT of them.
      const seqScan = /Seq Scan/.test(
        plan.replace(/Seq Scan on outbox\b.*\n\s*Filter: \(status = 'published'::text\)/g, ''),
      );
      expect({ name, seqScan }).toEqual({ name, seqScan: false });
      expect({ name, indexScan: /Index (Only )?Scan|Bitmap Index Scan/.test(plan) }).toEqual({
        name,
        indexScan: true,
      });
    }
    process.stdout.write(`${report.join('\n')}\n`);
  });
});

describe('retention of a week of activity minutes (PostgreSQL)', () => {
  // A window ten minutes short of the week: what a job that runs every few minutes finds.
  // Without an index on the minute, each such run read the whole table to find those.
  it('picks each cleanup batch of consumer_activity through the minute index', async () => {
    const store = await openTestStore('postgres');
    try {
      const client = new Client({ connectionString: databaseUrl() });
      await client.connect();
      try {
        await client.query(
          `insert into ${store.names.table('consumer_activity')}
             (consumer, minute, handled, duplicates, dead_lettered)
           select 'consumer-' || c, date_trunc('minute', now()) - m * interval '1 minute', 1, 0, 0
             from generate_series(0, ${ACTIVITY_CONSUMERS - 1}) as c,
                  generate_series(0, ${ACTIVITY_MINUTES - 1}) as m`,
        );
        await client.query(`vacuum analyze ${store.names.table('consumer_activity')}`);
      } finally {
        await client.end();
      }
      const target = CLEANUP_TARGETS.find((t) => t.table === 'consumer_activity');
      const condition = target?.condition({
        retentionMs: (ACTIVITY_MINUTES - 10) * 60_000,
        deadLetterRetentionMs: undefined,
      });
      if (condition === undefined) throw new Error('consumer_activity has no cleanup condition');
      const plan = rowsOf<{ 'QUERY PLAN': string }>(
        await store.knex.raw(
          `explain (costs off) select ctid from ${store.names.table('consumer_activity')}
            where ${condition.sql} limit 1000 for update skip locked`,
          condition.bindings,
        ),
      )
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      expect(plan).toContain(store.names.raw('consumer_activity_minute_idx'));
      expect(plan).not.toContain('Seq Scan');
    } finally {
      await store.dispose();
    }
  }, 120_000);
});
