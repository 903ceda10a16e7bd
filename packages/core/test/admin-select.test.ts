/**
 * The operator's "select, then act": `admin.deadLetters.select` and `admin.outbox.select` read
 * every row matching the filters page by page (1000 rows a page, each after the last id of the
 * page before), and `admin.bulk` acts on each id with one rule for what fails an item and what
 * stops the run. Rows are inserted with one `generate_series` statement: the inbox and the
 * relay would take minutes to make this many.
 */
import {
  ConfigurationError,
  createAdmin,
  hasErrorCode,
  isJustonceError,
  rowsOf,
  type Admin,
  type BulkDone,
  type BulkFailure,
} from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { watchStatements } from './fixtures/statements';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** More rows than two pages of `list` hold. */
const LETTERS = 2600;
const EVENTS = 1800;

/** The integers 1 to 9 999 as `s.i`, in a FROM clause: MySQL has no `generate_series`. */
const MYSQL_SERIES = (() => {
  const digits = `(select 0 as d union all ${[1, 2, 3, 4, 5, 6, 7, 8, 9]
    .map((d) => `select ${d}`)
    .join(' union all ')})`;
  return `(select a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 1 as i
             from ${digits} a, ${digits} b, ${digits} c, ${digits} e) as s`;
})();

/** `count` dead letters of consumers `c0` and `c1` in turn; every tenth requeued. */
async function insertLetters(store: TestStore, count: number, prefix: string): Promise<void> {
  if (store.dialect === 'mysql') {
    await store.knex.raw(
      `insert into ${store.names.table('dead_letters')}
         (scope, consumer, message_id, dedupe, fingerprint, reason, error_code, error_message,
          attempts, partition_key, headers, body, body_is_text, delivery, dead_at, requeued_at)
       select 'default', concat('c', i % 2), concat(?, i), true, md5(i), 'MAX_ATTEMPTS', 'E',
              'failed', 3, null, '{}', x'00', false, '{}',
              current_timestamp(6) - interval (? - i) second,
              case when i % 10 = 0 then current_timestamp(6) end
         from ${MYSQL_SERIES} where i <= ? order by i`,
      [prefix, count, count],
    );
    return;
  }
  await store.knex.raw(
    `insert into ${store.names.table('dead_letters')}
       (scope, consumer, message_id, dedupe, fingerprint, reason, error_code, error_message,
        attempts, partition_key, headers, body, body_is_text, delivery, dead_at, requeued_at)
     select 'default', 'c' || (i % 2), ? || i, true, md5(i::text), 'MAX_ATTEMPTS', 'E',
            'failed', 3, null, '{}'::jsonb, '\\x00'::bytea, false, '{}'::jsonb,
            now() - ((? - i) * interval '1 second'),
            case when i % 10 = 0 then now() end
       from generate_series(1, ?) as i`,
    [prefix, count, count],
  );
}

/** `count` outbox events of destinations `d0` and `d1` in turn; every third pending, the rest dead. */
async function insertEvents(store: TestStore, count: number): Promise<void> {
  if (store.dialect === 'mysql') {
    await store.knex.raw(
      `insert into ${store.names.table('outbox')}
         (destination, partition_key, message_id, headers, payload, created_at, available_at,
          attempts, last_error, status)
       select concat('d', i % 2), null, concat('e-', i), '{}', '{}', current_timestamp(6),
              current_timestamp(6),
              case when i % 3 = 0 then 0 else 5 end,
              case when i % 3 = 0 then null else 'broker says no' end,
              case when i % 3 = 0 then 'pending' else 'dead' end
         from ${MYSQL_SERIES} where i <= ? order by i`,
      [count],
    );
    return;
  }
  await store.knex.raw(
    `insert into ${store.names.table('outbox')}
       (destination, partition_key, message_id, headers, payload, created_at, available_at,
        attempts, last_error, status)
     select 'd' || (i % 2), null, 'e-' || i, '{}'::jsonb, convert_to('{}', 'UTF8'), now(), now(),
            case when i % 3 = 0 then 0 else 5 end,
            case when i % 3 = 0 then null else 'broker says no' end,
            case when i % 3 = 0 then 'pending' else 'dead' end
       from generate_series(1, ?) as i`,
    [count],
  );
}

/** The ids `sql` selects, in id order. */
async function idsOf(store: TestStore, sql: string): Promise<string[]> {
  return rowsOf<{ id: string | number }>(await store.knex.raw(sql)).map((r) => String(r.id));
}

/** Counts the statements `call` runs on the store's knex. */
async function statements<T>(store: TestStore, call: () => Promise<T>): Promise<[T, string[]]> {
  const seen: string[] = [];
  const stop = watchStatements(store.knex, (sql) => seen.push(sql));
  try {
    return [await call(), seen];
  } finally {
    stop();
  }
}

describe.each(ALL_STORE_KINDS)('admin select and bulk on %s', (kind) => {
  let store: TestStore;
  let admin: Admin;
  let letterIds: string[];

  beforeAll(async () => {
    store = await openTestStore(kind);
    admin = createAdmin(store);
    await insertLetters(store, LETTERS, 'm-');
    await insertEvents(store, EVENTS);
    letterIds = await idsOf(
      store,
      `select id from ${store.names.table('dead_letters')} order by id`,
    );
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('deadLetters.select reads every matching letter across pages, in id order', async () => {
    const table = store.names.table('dead_letters');
    const expected = await idsOf(
      store,
      `select id from ${table} where consumer = 'c0' and requeued_at is null order by id`,
    );
    expect(expected.length).toBeGreaterThan(1000); // more than one page

    const [letters, sql] = await statements(store, () =>
      admin.deadLetters.select({ consumer: 'c0', includeRequeued: false }).toArray(),
    );
    expect(letters.map((l) => l.id)).toEqual(expected);
    expect(letters.every((l) => l.consumer === 'c0' && l.requeuedAt === null)).toBe(true);
    expect(sql).toHaveLength(2); // a full page of 1000, then the short last one

    // Iterated, the same rows; requeued ones included by default, as with list.
    const all: string[] = [];
    for await (const letter of admin.deadLetters.select()) all.push(letter.id);
    expect(all).toEqual(letterIds);
  });

  it('deadLetters.select stops at limit and starts after a cursor', async () => {
    const [first, sql] = await statements(store, () =>
      admin.deadLetters.select({ limit: 1500 }).toArray(),
    );
    expect(first.map((l) => l.id)).toEqual(letterIds.slice(0, 1500));
    expect(sql).toHaveLength(2); // 1000, then the 500 still wanted

    const rest = await admin.deadLetters.select({ after: letterIds[1499]! }).toArray();
    expect(rest.map((l) => l.id)).toEqual(letterIds.slice(1500));

    // One page of a list screen: one statement of limit 51.
    const [page, pageSql] = await statements(store, () =>
      admin.deadLetters.select({ after: letterIds[9]!, limit: 51 }).toArray(),
    );
    expect(page.map((l) => l.id)).toEqual(letterIds.slice(10, 61));
    expect(pageSql).toHaveLength(1);

    // Named ids end the selection once all are read: no empty page after them.
    const named = [letterIds[3]!, letterIds[2000]!, letterIds[5]!];
    const [byId, idSql] = await statements(store, () =>
      admin.deadLetters.select({ ids: named }).toArray(),
    );
    expect(byId.map((l) => l.id)).toEqual([letterIds[3], letterIds[5], letterIds[2000]]);
    expect(idSql).toHaveLength(1);
  });

  it('outbox.select reads every matching event across pages (dead ones by default)', async () => {
    const table = store.names.table('outbox');
    const dead = await idsOf(store, `select id from ${table} where status = 'dead' order by id`);
    expect(dead.length).toBeGreaterThan(1000);
    const events = await admin.outbox.select().toArray();
    expect(events.map((e) => e.id)).toEqual(dead);

    const pending = await idsOf(
      store,
      `select id from ${table} where status = 'pending' and destination = 'd1' order by id`,
    );
    const some = await admin.outbox
      .select({ status: 'pending', destination: 'd1', after: pending[0]!, limit: 100 })
      .toArray();
    expect(some.map((e) => e.id)).toEqual(pending.slice(1, 101));
  });

  it('select refuses a bad limit or an unknown key when called, a bad filter before any SQL', async () => {
    expect(() => admin.deadLetters.select({ limit: 0 })).toThrow(ConfigurationError);
    expect(() => admin.outbox.select({ limit: 1.5 })).toThrow(ConfigurationError);
    expect(() => admin.deadLetters.select({ consumr: 'c0' } as never)).toThrow(/consumer/);
    const [error, sql] = await statements(store, () =>
      admin.outbox
        .select({ status: 'gone' as never })
        .toArray()
        .catch((e: unknown) => e),
    );
    expect(hasErrorCode(error, 'INVALID_CONFIG')).toBe(true);
    expect(sql).toEqual([]);
  });

  it('bulk: a refusal or nothing to change fails the item, the others go on', async () => {
    await insertLetters(store, 3, 'bulk-');
    const table = store.names.table('dead_letters');
    const [a, b, c] = await idsOf(
      store,
      `select id from ${table} where message_id like 'bulk-%' order by id`,
    );
    await store.knex.raw(`update ${table} set message_id = null where id = ?`, [b!]);
    const unknown = '999999999';
    const seen: (BulkDone<string> | BulkFailure)[] = [];

    const result = await admin.bulk(
      [a!, b!, unknown, c!],
      (id) => admin.redeliverDeadLetter(id, { destination: 'orders' }),
      { onItem: (outcome) => seen.push(outcome) },
    );
    expect(result.done.map((d) => d.id)).toEqual([a, c]);
    for (const d of result.done) expect(d.result).toMatch(/^[1-9][0-9]*$/); // the outbox row
    expect(result.failed.map((f) => [f.id, f.error?.code])).toEqual([
      [b, 'DEAD_LETTER_NOT_REDELIVERABLE'],
      [unknown, 'DEAD_LETTER_NOT_FOUND'],
    ]);
    expect(seen.map((o) => o.id)).toEqual([a, b, unknown, c]);

    // `false` (nothing deleted) and `null` (not a dead event) fail the item with no error.
    const deleted = await admin.bulk([a!, unknown], (id) => admin.deadLetters.delete(id));
    expect(deleted).toEqual({ done: [{ id: a, result: true }], failed: [{ id: unknown }] });
    const pendingId = (
      await idsOf(store, `select id from ${store.names.table('outbox')} where status = 'pending'`)
    )[0]!;
    const requeued = await admin.bulk([pendingId], (id) => admin.outbox.requeue(id));
    expect(requeued).toEqual({ done: [], failed: [{ id: pendingId }] });
  });

  it('bulk: a store fault stops the run; the items before it stay done', async () => {
    const own = await openTestStore(kind);
    try {
      const ownAdmin = createAdmin(own);
      await insertLetters(own, 3, 'stop-');
      const ids = await idsOf(own, `select id from ${own.names.table('dead_letters')} order by id`);
      const tried: string[] = [];
      const done: string[] = [];
      const error = await ownAdmin
        .bulk(
          ids,
          async (id) => {
            tried.push(id);
            if (id === ids[1]) await own.close(); // the store goes away under the run
            return ownAdmin.deadLetters.delete(id);
          },
          { onItem: (outcome) => done.push(outcome.id) },
        )
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect(isJustonceError(error)).toBe(false); // the driver's own error, as it was thrown
      expect(done).toEqual([ids[0]]);
      expect(tried).toEqual([ids[0], ids[1]]); // the third was never tried
    } finally {
      if (kind === 'postgres') {
        await store.knex.raw(`drop schema if exists "${own.schema}" cascade`);
      }
      if (kind === 'mysql') await store.knex.raw(`drop database if exists \`${own.schema}\``);
    }
  });

  it('bulk refuses ids that are not an iterable, and an action that is not a function', async () => {
    await expect(admin.bulk('12' as never, async () => true)).rejects.toThrow(ConfigurationError);
    await expect(admin.bulk(['12'], 'delete' as never)).rejects.toThrow(ConfigurationError);
  });
});
