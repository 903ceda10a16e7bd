/**
 * The admin API on MySQL and MariaDB: status figures, the outbox's list, get, select and
 * delete, and the operations' list, get and release. The inbox, the outbox and the relay get
 * their MySQL statements on their own: the rows they would write are inserted here with SQL,
 * as they write them, so that what the admin reads is tested now.
 */
import {
  ConfigurationError,
  createAdmin,
  createOperations,
  createStore,
  LeaseLostError,
  rowsOf,
  type Admin,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { mysqlUrl, openTestStore, uniqueSchema } from './db';
import { rejection } from './fixtures/gate';
import { createOrdersTable, insertOrder, ordersOf } from './fixtures/orders-support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** Outbox rows as the outbox and the relay leave them. */
async function insertEvents(
  store: TestStore,
  rows: ReadonlyArray<{ destination: string; status: string; attempts?: number; agoS?: number }>,
): Promise<string[]> {
  const table = store.names.table('outbox');
  // mysql2's answer to an insert: [header]; a multi-row insert's ids follow its first one.
  const [header] = (await store.knex.raw(
    `insert into ${table} (destination, message_id, headers, payload, created_at, attempts,
                           status, published_at)
     values ${rows.map(() => `(?, uuid(), '{"h":"1"}', x'7b7d', current_timestamp(6) - interval ? second, ?, ?, if(? = 'published', current_timestamp(6), null))`).join(', ')}`,
    rows.flatMap((r) => [r.destination, r.agoS ?? 0, r.attempts ?? 0, r.status, r.status]),
  )) as [{ insertId: number }];
  return rows.map((_, i) => String(header.insertId + i));
}

/** Sorted ids of the outbox rows `where` selects. */
async function outboxIds(store: TestStore, where: string): Promise<string[]> {
  return rowsOf<{ id: string | number }>(
    await store.knex.raw(
      `select id from ${store.names.table('outbox')} where ${where} order by id`,
    ),
  ).map((r) => String(r.id));
}

describe('createAdmin on MySQL and MariaDB', () => {
  let store: TestStore;
  let admin: Admin;
  beforeAll(async () => {
    store = await openTestStore('mysql');
    await createOrdersTable(store);
    admin = createAdmin(store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('status: reads every figure from the rows each feature writes', async () => {
    const empty = await admin.status();
    expect(empty).toMatchObject({
      schema: store.schema,
      outbox: [],
      deadLetters: [],
      consumers: [],
      operations: [],
      retention: { expiredDedupRecords: 0, publishedOutboxRows: 0, countLimit: 100_000 },
    });
    expect(empty.at).toBeInstanceOf(Date);

    await insertEvents(store, [
      { destination: 'orders', status: 'published' },
      { destination: 'orders', status: 'published' },
      { destination: 'orders', status: 'dead', attempts: 1 },
      { destination: 'emails', status: 'pending', agoS: 30 },
      { destination: 'emails', status: 'pending' },
    ]);
    await store.knex.raw(
      `insert into ${store.names.table('dead_letters')}
         (scope, consumer, message_id, dedupe, fingerprint, reason, attempts, headers, body,
          body_is_text, delivery, dead_at, requeued_at)
       values ('default', 'shipping', 'm1', true, 'f1', 'MAX_ATTEMPTS', 1, '{}', x'00', false, '{}',
               current_timestamp(6), null),
              ('default', 'shipping', 'm2', true, 'f2', 'MAX_ATTEMPTS', 1, '{}', x'00', false, '{}',
               current_timestamp(6), null),
              ('default', 'shipping', 'm3', true, 'f3', 'NON_RETRIABLE', 1, '{}', x'00', false, '{}',
               current_timestamp(6), null),
              ('default', 'shipping', 'm4', true, 'f4', 'NON_RETRIABLE', 1, '{}', x'00', false, '{}',
               current_timestamp(6), current_timestamp(6))`,
    );
    // Three handled by `billing` (one of them an hour and a half ago), one expired.
    await store.knex.raw(
      `insert into ${store.names.table('inbox_records')}
         (consumer, scope, message_id, status, fingerprint, created_at, expires_at)
       values ('billing', 'default', 'b1', 'SUCCEEDED', 'h', current_timestamp(6),
               current_timestamp(6) + interval 1 day),
              ('billing', 'default', 'b2', 'SUCCEEDED', 'h', current_timestamp(6),
               current_timestamp(6) + interval 1 day),
              ('billing', 'default', 'b3', 'SUCCEEDED', 'h', current_timestamp(6) - interval 90 minute,
               current_timestamp(6) - interval 1 minute)`,
    );
    const minute = "date_format(current_timestamp(6), '%Y-%m-%d %H:%i:00')";
    await store.knex.raw(
      `insert into ${store.names.table('consumer_activity')}
         (consumer, minute, handled, duplicates, dead_lettered)
       values ('billing', ${minute}, 2, 1, 0), ('shipping', ${minute}, 0, 0, 3),
              ('shipping', ${minute} - interval 2 hour, 0, 0, 9)`,
    );
    const charge = createOperations({ store, operation: 'charge' });
    await charge.run('done-1', { a: 1 }, () => Promise.resolve('ok'), { retentionMs: 1 });
    const dying = createOperations({ store, operation: 'charge', leaseMs: 20 });
    expect((await dying.reserve('stuck-1', { a: 2 })).kind).toBe('acquired');
    const slow = createOperations({ store, operation: 'refund', leaseMs: 600_000 });
    expect((await slow.reserve('busy-1', { a: 3 })).kind).toBe('acquired');

    const status = await waitFor('the short lease and the 1 ms retention to pass', async () => {
      const read = await admin.status();
      return read.operations[0]?.pastLease === 1 && read.retention.expiredDedupRecords === 2
        ? read
        : undefined;
    });
    expect(status.outbox).toEqual([
      { destination: 'emails', pending: 2, oldestPendingSeconds: expect.any(Number), dead: 0 },
      { destination: 'orders', pending: 0, oldestPendingSeconds: null, dead: 1 },
    ]);
    expect(status.outbox[0]!.oldestPendingSeconds).toBeGreaterThanOrEqual(30);
    expect(status.deadLetters).toEqual([
      { consumer: 'shipping', reason: 'MAX_ATTEMPTS', count: 2, newestAt: expect.any(Date) },
      { consumer: 'shipping', reason: 'NON_RETRIABLE', count: 1, newestAt: expect.any(Date) },
    ]);
    expect(status.consumers).toEqual([
      { name: 'billing', handledLastHour: 2, duplicatesLastHour: 1, deadLetteredLastHour: 0 },
      { name: 'charge', handledLastHour: 1, duplicatesLastHour: 0, deadLetteredLastHour: 0 },
      { name: 'shipping', handledLastHour: 0, duplicatesLastHour: 0, deadLetteredLastHour: 3 },
    ]);
    expect(status.operations).toEqual([
      { operation: 'charge', inProgress: 0, pastLease: 1 },
      { operation: 'refund', inProgress: 1, pastLease: 0 },
    ]);
    // The expired dedup records: the operation's and billing's old one.
    expect(status.retention).toEqual({
      expiredDedupRecords: 2,
      publishedOutboxRows: 2,
      countLimit: 100_000,
    });
  });

  it('outbox: lists, gets, selects and deletes dead and stuck events', async () => {
    const [dead, fresh, tried, old, published] = await insertEvents(store, [
      { destination: 'ob-a', status: 'dead', attempts: 5 },
      { destination: 'ob-a', status: 'pending' },
      { destination: 'ob-a', status: 'pending', attempts: 2 },
      { destination: 'ob-b', status: 'pending', agoS: 3600 },
      { destination: 'ob-b', status: 'published' },
    ]);
    const listed = await admin.outbox.list({ destination: 'ob-a' });
    expect(listed.map((e) => e.id)).toEqual([dead]);
    expect(listed[0]).toMatchObject({
      destination: 'ob-a',
      key: null,
      status: 'dead',
      headers: { h: '1' },
      attempts: 5,
      publishedAt: null,
    });
    expect(Buffer.from(listed[0]!.payload).toString()).toBe('{}');
    const stuck = await admin.outbox.list({ status: 'stuck', stuckAfterMs: 60_000 });
    expect(stuck.map((e) => e.id)).toEqual([tried, old]);
    const pending = await admin.outbox.list({ status: 'pending', ids: [fresh!, old!, dead!] });
    expect(pending.map((e) => e.id)).toEqual([fresh, old]);
    expect(
      (await admin.outbox.list({ status: 'pending', after: tried! })).map((e) => e.id),
    ).toEqual([old]);
    expect(await admin.outbox.get(published!)).toMatchObject({ status: 'published' });
    expect(await admin.outbox.get('999999999')).toBeUndefined();
    const everyDead = await admin.outbox.select().toArray();
    expect(everyDead.map((e) => e.id)).toEqual(await outboxIds(store, "status = 'dead'"));

    expect(await admin.outbox.delete(published!)).toBe(false);
    expect(await admin.outbox.delete(dead!)).toBe(true);
    expect(await admin.outbox.delete(dead!)).toBe(false);
    expect(await admin.outbox.get(dead!)).toBeUndefined();
  });

  it('operations: lists in-progress and past-lease records, gets and releases them', async () => {
    const dying = createOperations({ store, operation: 'ops-pay', leaseMs: 20 });
    const holding = createOperations({ store, operation: 'ops-pay', leaseMs: 600_000 });
    expect((await dying.reserve('gone', { v: 1 })).kind).toBe('acquired');
    expect((await holding.reserve('held', { v: 2 })).kind).toBe('acquired');
    await waitFor('the short lease to pass', async () => {
      const past = await admin.operations.list({ operation: 'ops-pay', state: 'past-lease' });
      return past.length === 1;
    });

    const all = await admin.operations.list({ operation: 'ops-pay' });
    expect(all.map((r) => [r.key, r.pastLease])).toEqual([
      ['gone', true],
      ['held', false],
    ]);
    const past = await admin.operations.list({ operation: 'ops-pay', state: 'past-lease' });
    expect(past[0]).toMatchObject({
      scope: 'default',
      operation: 'ops-pay',
      key: 'gone',
      status: 'IN_PROGRESS',
      attempts: 1,
    });
    expect(past[0]!.ownerId).toEqual(expect.any(String));
    expect(past[0]!.requestHash).toMatch(/^[0-9a-f]{64}$/);

    expect(await admin.operations.release({ operation: 'ops-pay', key: 'held' })).toBe(false);
    expect(
      await admin.operations.release({ operation: 'ops-pay', key: 'held' }, { force: true }),
    ).toBe(true);
    expect(await admin.operations.release({ operation: 'ops-pay', key: 'gone' })).toBe(true);
    expect(await admin.operations.release({ operation: 'ops-pay', key: 'gone' })).toBe(false);
    expect(await admin.operations.get({ operation: 'ops-pay', key: 'gone' })).toMatchObject({
      status: 'FAILED_RETRIABLE',
      ownerId: null,
      leaseUntil: null,
      pastLease: false,
      error: { code: 'RELEASED' },
    });
    expect(await admin.operations.list({ operation: 'ops-pay' })).toEqual([]);
    expect(await admin.operations.get({ operation: 'ops-pay', key: 'nope' })).toBeUndefined();
  });

  it("operations.get reads an inbox consumer's record under the consumer's name", async () => {
    await store.knex.raw(
      `insert into ${store.names.table('inbox_records')}
         (consumer, scope, message_id, status, fingerprint, created_at, expires_at)
       values ('mailer', 'default', 'msg-1', 'SUCCEEDED', 'fp', current_timestamp(6),
               current_timestamp(6) + interval 1 day)`,
    );
    expect(await admin.operations.get({ operation: 'mailer', key: 'msg-1' })).toMatchObject({
      scope: 'default',
      operation: 'mailer',
      key: 'msg-1',
      requestHash: 'fp',
      status: 'SUCCEEDED',
      ownerId: null,
      leaseUntil: null,
      pastLease: false,
    });
    expect(
      await admin.operations.release({ operation: 'mailer', key: 'msg-1' }, { force: true }),
    ).toBe(false);
  });

  it('release: the dead owner is fenced off, the next call runs the effect once', async () => {
    const ops = createOperations({ store, operation: 'release-tx', leaseMs: 600_000 });
    const first = await ops.reserve('k', { amount: 5 });
    if (first.kind !== 'acquired') throw new Error(`expected acquired, got ${first.kind}`);
    expect(
      await admin.operations.release({ operation: 'release-tx', key: 'k' }, { force: true }),
    ).toBe(true);
    expect(await rejection(ops.complete(first.ref, 'late'))).toBeInstanceOf(LeaseLostError);
    const order = await ops.runInTransaction('k', { amount: 5 }, (trx, ctx) =>
      insertOrder(trx, store, ctx, 5),
    );
    expect(order.attempt).toBe(2);
    expect(await ordersOf(store, 'k')).toEqual([order.orderId]);
    // The request hash was kept: another request under the key is still refused.
    await expect(ops.run('k', { amount: 6 }, () => Promise.resolve(1))).rejects.toMatchObject({
      code: 'OPERATION_CONFLICT',
    });
  });

  it('says the database is not migrated instead of a driver error', async () => {
    const bare = await createStore({ connectionString: mysqlUrl(), schema: uniqueSchema('bare') });
    try {
      const error = await createAdmin(bare)
        .status()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toMatch(/has no justonce tables: run the migrations/);
      await expect(createAdmin(bare).outbox.list()).rejects.toBeInstanceOf(ConfigurationError);
    } finally {
      await bare.close();
    }
  });
});
