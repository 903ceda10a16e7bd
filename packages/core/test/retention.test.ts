import {
  createInbox,
  createOperations,
  createRetention,
  isRetentionTooShortError,
  rowsOf,
  type RetentionBatch,
  type RetentionOptions,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { ALL_STORE_KINDS, openTestStore } from './db';

/** How long the checks below wait for a retention run, and how often they look. */
const SOON = { timeoutMs: 5_000, intervalMs: 10 };

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * Inserts `count` idempotency rows named `<prefix>-<n>`, with `expires_at` and `updated_at`
 * at the given offsets from the database's now, in milliseconds.
 */
async function seedRecords(
  store: TestStore,
  prefix: string,
  count: number,
  at: { expiresInMs: number; updatedAgoMs: number; status?: string; leaseInMs?: number },
): Promise<void> {
  if (store.dialect === 'mysql') return seedMysqlRecords(store, prefix, count, at);
  await store.knex.raw(
    `insert into ${store.names.table('idempotency')}
       (scope, operation, key, status, owner_id, lease_until, created_at, updated_at, expires_at)
     select 'default', 'seeded', ? || '-' || n, ?, 'seed-owner',
            case when ?::double precision is null then null
                 else now() + ?::double precision * interval '1 millisecond' end,
            now() - ?::double precision * interval '1 millisecond',
            now() - ?::double precision * interval '1 millisecond',
            now() + ?::double precision * interval '1 millisecond'
       from generate_series(1, ?::integer) as n`,
    [
      prefix,
      at.status ?? 'SUCCEEDED',
      at.leaseInMs ?? null,
      at.leaseInMs ?? null,
      at.updatedAgoMs,
      at.updatedAgoMs,
      at.expiresInMs,
      count,
    ],
  );
}

/** {@link seedRecords} on MySQL: one multi-row insert, offsets in microseconds. */
async function seedMysqlRecords(
  store: TestStore,
  prefix: string,
  count: number,
  at: { expiresInMs: number; updatedAgoMs: number; status?: string; leaseInMs?: number },
): Promise<void> {
  const plus = 'date_add(current_timestamp(6), interval ? microsecond)';
  const lease = at.leaseInMs === undefined ? 'null' : plus;
  const rows = Array.from({ length: count }, (_, i) => [
    `${prefix}-${i + 1}`,
    at.status ?? 'SUCCEEDED',
    ...(at.leaseInMs === undefined ? [] : [at.leaseInMs * 1000]),
    -at.updatedAgoMs * 1000,
    -at.updatedAgoMs * 1000,
    at.expiresInMs * 1000,
  ]);
  await store.knex.raw(
    `insert into ${store.names.table('idempotency')}
       (scope, operation, \`key\`, status, owner_id, lease_until, created_at, updated_at, expires_at)
     values ${rows.map(() => `('default', 'seeded', ?, ?, 'seed-owner', ${lease}, ${plus}, ${plus}, ${plus})`).join(', ')}`,
    rows.flat(),
  );
}

async function keysLeft(store: TestStore): Promise<string[]> {
  const rows = rowsOf<{ key: string }>(
    await store.knex.raw(
      store.dialect === 'mysql'
        ? `select convert(\`key\` using utf8mb4) as \`key\` from ${store.names.table('idempotency')} order by \`key\``
        : `select key from ${store.names.table('idempotency')} order by key`,
    ),
  );
  return rows.map((r) => r.key);
}

async function countRows(store: TestStore, table: string): Promise<number> {
  const rows = rowsOf<{ n: number | string }>(
    await store.knex.raw(`select count(*) as n from ${store.names.table(table)}`),
  );
  return Number(rows[0]?.n);
}

/** Old expired rows: past `expires_at` and written two hours ago. */
const STALE = { expiresInMs: -HOUR, updatedAgoMs: 2 * HOUR };

describe.each(ALL_STORE_KINDS)('retention on %s', (kind) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });
  beforeEach(async () => {
    for (const table of [
      'idempotency',
      'inbox_records',
      'inbox_attempts',
      'dead_letters',
      'consumer_activity',
    ]) {
      await store.knex.raw(`delete from ${store.names.table(table)}`);
    }
  });

  const retention = (options: Omit<RetentionOptions, 'store'>) =>
    createRetention({ store, ...options });

  it('deletes only expired records outside the window, in bounded batches', async () => {
    await seedRecords(store, 'stale', 25, STALE);
    await seedRecords(store, 'live', 3, { expiresInMs: HOUR, updatedAgoMs: 2 * HOUR });
    // Past their own expiry, but written inside the 10-minute window: kept.
    await seedRecords(store, 'recent', 4, { expiresInMs: -MINUTE, updatedAgoMs: MINUTE });
    // Past expiry with a live lease (an owner still working): kept.
    await seedRecords(store, 'leased', 2, {
      ...STALE,
      status: 'IN_PROGRESS',
      leaseInMs: HOUR,
    });
    const batches: RetentionBatch[] = [];
    const result = await retention({
      retentionMs: 10 * MINUTE,
      batchSize: 10,
      onBatch: (b) => batches.push(b),
    }).runOnce();

    expect(batches.filter((b) => b.table === 'idempotency').map((b) => b.deleted)).toEqual([
      10, 10, 5,
    ]);
    expect(result.tables.idempotency).toEqual({ deleted: 25, batches: 3, complete: true });
    expect(result.complete).toBe(true);
    expect(result.deleted).toBe(25);
    expect(await keysLeft(store)).toEqual([
      'leased-1',
      'leased-2',
      'live-1',
      'live-2',
      'live-3',
      'recent-1',
      'recent-2',
      'recent-3',
      'recent-4',
    ]);
  });

  // Each batch starts where the last one ended in the column its condition bounds; rows that
  // share a value across a batch's end, and a row whose microseconds a JavaScript Date drops,
  // must not be left behind.
  it('walks the stale rows in order of expiry across batches, leaving none behind', async () => {
    for (const [i, size] of [3, 5, 1, 7, 2].entries()) {
      await seedRecords(store, `stale${i}`, size, {
        expiresInMs: -(HOUR + i * 1.234567),
        updatedAgoMs: 2 * HOUR,
      });
    }
    await seedRecords(store, 'live', 2, { expiresInMs: HOUR, updatedAgoMs: 2 * HOUR });
    const result = await retention({ retentionMs: 10 * MINUTE, batchSize: 4 }).runOnce();
    expect(result.tables.idempotency).toEqual({ deleted: 18, batches: 5, complete: true });
    expect(await keysLeft(store)).toEqual(['live-1', 'live-2']);
  });

  it('stops at maxBatchesPerRun and finishes on the next run', async () => {
    await seedRecords(store, 'stale', 25, STALE);
    const job = retention({ retentionMs: HOUR, batchSize: 10, maxBatchesPerRun: 2 });
    const first = await job.runOnce();
    expect(first.tables.idempotency).toEqual({ deleted: 20, batches: 2, complete: false });
    expect(first.complete).toBe(false);
    expect(await countRows(store, 'idempotency')).toBe(5);
    const second = await job.runOnce();
    expect(second.tables.idempotency).toEqual({ deleted: 5, batches: 1, complete: true });
    expect(await countRows(store, 'idempotency')).toBe(0);
  });

  it('deletes records that idempotent operations let expire, and keeps the others', async () => {
    const ops = createOperations({ store, operation: 'charge' });
    await ops.run('short', 1, async () => 'a', { retentionMs: 1 });
    await ops.run('long', 1, async () => 'b');
    // The retention floor is 1 ms here, so only expires_at decides.
    await waitFor(
      'the short-lived record to expire',
      async () => (await ops.get('short')) === undefined,
      SOON,
    );
    const result = await retention({ retentionMs: 1 }).runOnce();
    expect(result.tables.idempotency.deleted).toBe(1);
    expect(await keysLeft(store)).toEqual(['long']);
  });

  it("deletes the inbox's expired records outside the window, apart from operations'", async () => {
    const records = store.names.table('inbox_records');
    // Expired two hours ago and written three hours ago; expired but written inside the
    // window; written long ago but not expired.
    await store.knex.raw(
      kind === 'mysql'
        ? `insert into ${records} (consumer, scope, message_id, status, fingerprint, created_at, expires_at)
           values ('c', 'default', 'stale', 'SUCCEEDED', 'h', now(6) - interval 3 hour,
                   now(6) - interval 2 hour),
                  ('c', 'default', 'recent', 'FAILED_FINAL', 'h', now(6) - interval 1 minute,
                   now(6) - interval 1 second),
                  ('c', 'default', 'live', 'SUCCEEDED', 'h', now(6) - interval 3 hour,
                   now(6) + interval 1 hour)`
        : `insert into ${records} (consumer, scope, message_id, status, fingerprint, created_at, expires_at)
       values ('c', 'default', 'stale', 'SUCCEEDED', 'h', now() - interval '3 hours',
               now() - interval '2 hours'),
              ('c', 'default', 'recent', 'FAILED_FINAL', 'h', now() - interval '1 minute',
               now() - interval '1 second'),
              ('c', 'default', 'live', 'SUCCEEDED', 'h', now() - interval '3 hours',
               now() + interval '1 hour')`,
    );
    await seedRecords(store, 'stale', 2, STALE);
    const result = await retention({ retentionMs: 10 * MINUTE }).runOnce();
    expect(result.tables.inbox_records).toEqual({ deleted: 1, batches: 1, complete: true });
    expect(result.tables.idempotency).toEqual({ deleted: 2, batches: 1, complete: true });
    const left = rowsOf<{ message_id: string }>(
      await store.knex.raw(`select message_id from ${records} order by message_id`),
    );
    expect(left.map((r) => r.message_id)).toEqual(['live', 'recent']);
  });

  it('cleans stale inbox attempts, and old dead letters only when opted in', async () => {
    const attempts = store.names.table('inbox_attempts');
    await store.knex.raw(
      kind === 'mysql'
        ? `insert into ${attempts} (scope, consumer, message_id, attempts, first_attempt_at, last_attempt_at)
           values ('default', 'c', 'old', 3, now(6) - interval 3 hour, now(6) - interval 2 hour),
                  ('default', 'c', 'new', 1, now(6) - interval 3 hour, now(6) - interval 1 minute)`
        : `insert into ${attempts} (scope, consumer, message_id, attempts, first_attempt_at, last_attempt_at)
       values ('default', 'c', 'old', 3, now() - interval '3 hours', now() - interval '2 hours'),
              ('default', 'c', 'new', 1, now() - interval '3 hours', now() - interval '1 minute')`,
    );
    const letters = store.names.table('dead_letters');
    await store.knex.raw(
      kind === 'mysql'
        ? `insert into ${letters} (scope, consumer, message_id, dedupe, fingerprint, reason, attempts,
                                   headers, body, body_is_text, delivery, dead_at)
           values ('default', 'c', 'm1', true, 'f', 'MAX_ATTEMPTS', 5, '{}', x'00', false, '{}',
                   now(6) - interval 40 day),
                  ('default', 'c', 'm2', true, 'f', 'MAX_ATTEMPTS', 5, '{}', x'00', false, '{}',
                   now(6) - interval 1 day)`
        : `insert into ${letters} (scope, consumer, message_id, dedupe, fingerprint, reason, attempts,
                               headers, body, body_is_text, delivery, dead_at)
       values ('default', 'c', 'm1', true, 'f', 'MAX_ATTEMPTS', 5, '{}', '\\x00', false, '{}',
               now() - interval '40 days'),
              ('default', 'c', 'm2', true, 'f', 'MAX_ATTEMPTS', 5, '{}', '\\x00', false, '{}',
               now() - interval '1 day')`,
    );

    const kept = await retention({ retentionMs: HOUR }).runOnce();
    expect(kept.tables.inbox_attempts).toEqual({ deleted: 1, batches: 1, complete: true });
    expect(kept.tables.dead_letters).toEqual({
      deleted: 0,
      batches: 0,
      complete: true,
      skipped: 'disabled',
    });
    expect(await countRows(store, 'inbox_attempts')).toBe(1);
    expect(await countRows(store, 'dead_letters')).toBe(2);

    const opted = await retention({
      retentionMs: HOUR,
      deadLetterRetentionMs: 30 * 24 * HOUR,
    }).runOnce();
    expect(opted.tables.dead_letters).toEqual({ deleted: 1, batches: 1, complete: true });
    const left = rowsOf<{ message_id: string }>(
      await store.knex.raw(`select message_id from ${letters}`),
    );
    expect(left).toEqual([{ message_id: 'm2' }]);
  });

  it('cleans consumer activity older than the retention window, by minute', async () => {
    // The inbox's MySQL statements are ported on their own: there its minutes are written here.
    if (kind === 'mysql') return seedMysqlActivity(store);
    const inbox = createInbox({ store, consumer: 'activity' });
    for (const id of ['a1', 'a2']) {
      await inbox.process({ id, headers: {}, delivery: {}, body: '{}' }, async () => 'ok');
    }
    await inbox.flushActivity();
    const activity = store.names.table('consumer_activity');
    // Age the written minute by two hours, as time would.
    await store.knex.raw(`update ${activity} set minute = minute - interval '2 hours'`);
    await inbox.process({ id: 'a3', headers: {}, delivery: {}, body: '{}' }, async () => 'ok');
    await inbox.flushActivity();
    expect(await countRows(store, 'consumer_activity')).toBe(2);

    const result = await retention({ retentionMs: HOUR }).runOnce();
    expect(result.tables.consumer_activity).toEqual({ deleted: 1, batches: 1, complete: true });
    const left = rowsOf<{ handled: string | number }>(
      await store.knex.raw(`select handled from ${activity}`),
    );
    expect(left.map((r) => Number(r.handled))).toEqual([1]);
  });

  it('does not hold up writers: each batch is its own short statement', async () => {
    await seedRecords(store, 'stale', 3_000, STALE);
    const ops = createOperations({ store, operation: 'seeded' });
    let firstBatchDone!: () => void;
    const firstBatch = new Promise<void>((resolve) => {
      firstBatchDone = resolve;
    });
    const job = retention({
      retentionMs: HOUR,
      batchSize: 500,
      pauseBetweenBatchesMs: 200,
      onBatch: () => firstBatchDone(),
    });
    const started = Date.now();
    const run = job.runOnce();
    await firstBatch;
    // While the cleanup is between batches, a writer revives stale keys (some of them
    // rows the cleanup has not reached yet) and writes new ones.
    const latencies: number[] = [];
    for (const key of ['stale-2999', 'stale-3000', 'fresh-1', 'fresh-2']) {
      const t0 = Date.now();
      const reservation = await ops.reserve(key, { k: key });
      latencies.push(Date.now() - t0);
      expect(reservation.kind).toBe('acquired');
    }
    const result = await run;
    const runMs = Date.now() - started;
    // The run spans several pauses; no writer waited for anything like that long.
    expect(runMs).toBeGreaterThanOrEqual(900);
    expect(Math.max(...latencies)).toBeLessThan(400);
    // Revived and new keys are live records now, so the cleanup left them alone.
    expect(result.tables.idempotency.deleted).toBeGreaterThanOrEqual(2_998);
    expect(await keysLeft(store)).toEqual(['fresh-1', 'fresh-2', 'stale-2999', 'stale-3000']);
  });

  it('stops during a pause between two batches at once', async () => {
    await seedRecords(store, 'paused', 5, STALE);
    let batches = 0;
    const job = retention({
      retentionMs: HOUR,
      batchSize: 1,
      pauseBetweenBatchesMs: 60_000,
      onBatch: () => (batches += 1),
    });
    job.start(60_000);
    await waitFor('the first batch', () => batches === 1, SOON);
    const stopping = performance.now();
    await job.stop();
    expect(performance.now() - stopping).toBeLessThan(5_000);
    expect(batches).toBe(1);
    expect(await countRows(store, 'idempotency')).toBe(4);
  });

  it('runs in the background until stopped', async () => {
    await seedRecords(store, 'stale', 30, STALE);
    let batches = 0;
    const job = retention({ retentionMs: HOUR, batchSize: 10, onBatch: () => (batches += 1) });
    job.start(20);
    job.start(20);
    await waitFor(
      'the background job to delete every stale row',
      async () => (await countRows(store, 'idempotency')) === 0,
      SOON,
    );
    // New stale rows are picked up by a later pass.
    await seedRecords(store, 'later', 5, STALE);
    await waitFor(
      'a later pass to delete the new stale rows',
      async () => (await countRows(store, 'idempotency')) === 0,
      SOON,
    );
    await job.stop();
    await job.stop();
    const after = batches;
    await seedRecords(store, 'after-stop', 5, STALE);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(batches).toBe(after);
    expect(await countRows(store, 'idempotency')).toBe(5);
  });
});

/** Two minutes of consumer activity, one two hours old, as the inbox writes them; cleaned. */
async function seedMysqlActivity(store: TestStore): Promise<void> {
  const activity = store.names.table('consumer_activity');
  const minute = "date_format(current_timestamp(6), '%Y-%m-%d %H:%i:00')";
  await store.knex.raw(
    `insert into ${activity} (consumer, minute, handled)
     values ('activity', ${minute} - interval 2 hour, 2), ('activity', ${minute}, 1)`,
  );
  const result = await createRetention({ store, retentionMs: HOUR }).runOnce();
  expect(result.tables.consumer_activity).toEqual({ deleted: 1, batches: 1, complete: true });
  const left = rowsOf<{ handled: string | number }>(
    await store.knex.raw(`select handled from ${activity}`),
  );
  expect(left.map((r) => Number(r.handled))).toEqual([1]);
}

// PGlite has one connection: a writer holding a lock would hold the cleanup's only way in.
describe.each(['postgres', 'mysql'] as const)('retention on %s, concurrency', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('skips a row a writer has locked instead of waiting for it', async () => {
    await seedRecords(store, 'stale', 20, STALE);
    const table = store.names.table('idempotency');
    const writer = await store.knex.transaction();
    try {
      await writer.raw(
        kind === 'mysql'
          ? `select \`key\` from ${table}
              where scope = 'default' and operation = 'seeded' and \`key\` = ? for update`
          : `select key from ${table} where key = ? for update`,
        ['stale-7'],
      );
      const timeout = new Promise<never>((_, reject) => {
        const timer = setTimeout(() => reject(new Error('cleanup waited for the writer')), 3_000);
        timer.unref();
      });
      const result = await Promise.race([
        createRetention({ store, retentionMs: HOUR, batchSize: 5 }).runOnce(),
        timeout,
      ]);
      expect(result.tables.idempotency.deleted).toBe(19);
      expect(await keysLeft(store)).toEqual(['stale-7']);
    } finally {
      await writer.commit();
    }
    const later = await createRetention({ store, retentionMs: HOUR }).runOnce();
    expect(later.tables.idempotency.deleted).toBe(1);
  });

  it('reports a table the schema does not have', async () => {
    const old = await openTestStore(kind);
    try {
      await old.knex.raw(`drop table ${old.names.table('dead_letters')}`);
      const result = await createRetention({
        store: old,
        deadLetterRetentionMs: HOUR,
      }).runOnce();
      expect(result.tables.dead_letters).toEqual({
        deleted: 0,
        batches: 0,
        complete: true,
        skipped: 'missing',
      });
      expect(result.tables.idempotency.complete).toBe(true);
    } finally {
      await old.dispose();
    }
  });
});

describe('retention configuration', () => {
  const store = { knex: () => undefined } as unknown as RetentionOptions['store'];

  it('refuses a window shorter than the redelivery horizon', () => {
    let caught: unknown;
    try {
      createRetention({ store, retentionMs: HOUR, redeliveryHorizonMs: 2 * HOUR });
    } catch (error) {
      caught = error;
    }
    expect(isRetentionTooShortError(caught)).toBe(true);
    expect(caught).toMatchObject({
      code: 'INVALID_CONFIG',
      retentionMs: HOUR,
      redeliveryHorizonMs: 2 * HOUR,
    });
    // The default window (7 days) is checked too.
    expect(() => createRetention({ store, redeliveryHorizonMs: 14 * 24 * HOUR })).toThrow(
      expect.objectContaining({
        details: expect.objectContaining({ problem: 'RETENTION_TOO_SHORT' }),
      }),
    );
  });

  it('accepts a window equal to or longer than the horizon', () => {
    expect(
      createRetention({ store, retentionMs: HOUR, redeliveryHorizonMs: HOUR }).retentionMs,
    ).toBe(HOUR);
    expect(createRetention({ store, redeliveryHorizonMs: 4 * 24 * HOUR }).retentionMs).toBe(
      7 * 24 * HOUR,
    );
  });

  it.each([
    ['batchSize', { batchSize: 0 }],
    ['batchSize', { batchSize: 100_001 }],
    ['maxBatchesPerRun', { maxBatchesPerRun: 0 }],
    ['pauseBetweenBatchesMs', { pauseBetweenBatchesMs: -1 }],
    ['retentionMs', { retentionMs: Number.NaN }],
    ['deadLetterRetentionMs', { deadLetterRetentionMs: 0 }],
    ['redeliveryHorizonMs', { redeliveryHorizonMs: -5 }],
  ])('refuses an invalid %s', (_name, options) => {
    expect(() => createRetention({ store, ...options })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
  });
});
