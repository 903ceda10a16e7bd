import fc from 'fast-check';
import {
  createAdmin,
  createMemoryPublisher,
  createOutbox,
  createRelay,
  createRetention,
  createStore,
  DuplicateMessageIdError,
  rowsOf,
  type Relay,
  type Store,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { STORE_KINDS, databaseUrl, openTestStore, uniqueSchema } from './db';

const HOUR = 60 * 60_000;
const DAY = 24 * HOUR;

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

async function relkind(store: Store, table: string): Promise<string | undefined> {
  const result = await store.knex.raw(
    `select relkind::text as kind from pg_class where oid = to_regclass(?)`,
    [store.names.table(table)],
  );
  return rowsOf<{ kind: string }>(result)[0]?.kind;
}

/** The outbox's partitions, oldest first, the default last. */
async function partitionNames(store: Store): Promise<string[]> {
  const result = await store.knex.raw(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = to_regclass(?)
      order by (pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'), c.relname`,
    [store.names.table('outbox')],
  );
  return rowsOf<{ name: string }>(result).map((r) => r.name);
}

/** Adds an outbox partition for `[fromAgoMs, toAgoMs)` before now, as if made long ago. */
async function pastPartition(
  store: Store,
  suffix: string,
  fromAgoMs: number,
  toAgoMs: number,
): Promise<string> {
  const at = async (agoMs: number): Promise<string> => {
    const result = await store.knex.raw(
      `select (date_trunc('minute', now()) - ?::double precision * interval '1 millisecond')::text as t`,
      [agoMs],
    );
    return rowsOf<{ t: string }>(result)[0]!.t;
  };
  const name = `outbox_${suffix}`;
  await store.knex.raw(
    `create table ${store.names.table(name)} partition of ${store.names.table('outbox')}
       for values from ('${await at(fromAgoMs)}') to ('${await at(toAgoMs)}')`,
  );
  return name;
}

/** Inserts an event created `agoMs` ago, with the given status (and dead `diedAgoMs` ago). */
async function seedEvent(
  store: Store,
  messageId: string,
  agoMs: number,
  status: 'pending' | 'published' | 'dead' = 'pending',
  options: { key?: string; diedAgoMs?: number } = {},
): Promise<void> {
  await store.knex.raw(
    `insert into ${store.names.table('outbox')}
       (destination, partition_key, message_id, payload, status, created_at, available_at,
        published_at)
     values ('orders', ?, ?, '\\x7b7d'::bytea, ?,
             now() - ?::double precision * interval '1 millisecond',
             now() - ?::double precision * interval '1 millisecond',
             case when ? = 'published' then now() end)
     on conflict do nothing`,
    [options.key ?? null, messageId, status, agoMs, options.diedAgoMs ?? agoMs, status],
  );
}

async function messageIds(store: Store, table = 'outbox'): Promise<string[]> {
  const result = await store.knex.raw(
    `select message_id from ${store.names.table(table)} order by message_id`,
  );
  return rowsOf<{ message_id: string }>(result).map((r) => r.message_id);
}

/** Runs relay cycles until one claims nothing. */
async function drain(relay: Relay): Promise<void> {
  try {
    for (let i = 0; i < 50; i += 1) if ((await relay.runOnce()).claimed === 0) return;
    throw new Error('relay still busy after 50 cycles');
  } finally {
    await relay.stop();
  }
}

describe.each(STORE_KINDS)('the partitioned outbox on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind, { layout: 'partitioned' });
  });
  afterAll(async () => {
    await store.dispose();
  });
  beforeEach(async () => {
    await store.knex.raw(`delete from ${store.names.table('outbox')}`);
  });

  it('migrate() partitions the outbox by day, ahead, with a default partition and one id sequence', async () => {
    expect(await relkind(store, 'outbox')).toBe('p');
    const names = await partitionNames(store);
    expect(names.at(-1)).toBe('outbox_default');
    expect(names.length).toBeGreaterThanOrEqual(4 + 1);
    const def = await store.knex.raw(
      `select pg_get_expr(d.adbin, d.adrelid) as def
         from pg_attrdef d join pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
        where d.adrelid = to_regclass(?) and a.attname = 'id'`,
      [store.names.table('outbox')],
    );
    expect(rowsOf<{ def: string }>(def)[0]!.def).toMatch(/nextval\(.*outbox_id_seq/);
  });

  it('outbox.add refuses a message id another partition holds, and ids keep increasing', async () => {
    const old = await pastPartition(store, 'p_dup', 10 * DAY, 9 * DAY);
    await seedEvent(store, 'dup-old', 9.5 * DAY, 'published');
    const outbox = createOutbox({ store });
    await expect(
      store.knex.transaction((trx) =>
        outbox.add(trx, [
          { destination: 'orders', messageId: 'fresh-1', payload: {} },
          { destination: 'orders', messageId: 'dup-old', payload: {} },
        ]),
      ),
    ).rejects.toBeInstanceOf(DuplicateMessageIdError);
    expect(await messageIds(store)).toEqual(['dup-old']);
    await store.knex.transaction((trx) =>
      outbox.add(trx, [
        { destination: 'orders', messageId: 'fresh-1', payload: {} },
        { destination: 'orders', messageId: 'fresh-2', payload: {} },
      ]),
    );
    const ids = rowsOf<{ message_id: string; id: string; part: string }>(
      await store.knex.raw(
        `select message_id, id::text as id, tableoid::regclass::text as part
           from ${store.names.table('outbox')} order by id`,
      ),
    );
    expect(ids.map((r) => r.message_id)).toEqual(['dup-old', 'fresh-1', 'fresh-2']);
    expect(ids[0]!.part).toContain(old);
    expect(ids[1]!.part).not.toContain(old);
    await store.knex.raw(`drop table ${store.names.table(old)}`);
  });

  it('retention drops outbox partitions past the window, holding back those with a pending or kept dead event', async () => {
    const published = await pastPartition(store, 'p_published', 10 * DAY, 9 * DAY);
    const pending = await pastPartition(store, 'p_pending', 9 * DAY, 8 * DAY);
    const dead = await pastPartition(store, 'p_dead', 8 * DAY, 7.5 * DAY);
    const inWindow = await pastPartition(store, 'p_window', 7.5 * DAY, 6 * DAY);
    await seedEvent(store, 'published-1', 9.5 * DAY, 'published');
    await seedEvent(store, 'pending-1', 8.5 * DAY, 'pending', { key: 'k' });
    await seedEvent(store, 'dead-1', 7.8 * DAY, 'dead', { diedAgoMs: 7.7 * DAY });
    await seedEvent(store, 'window-1', 7 * DAY, 'published');

    const first = (await createRetention({ store }).runOnce()).tables.outbox;
    expect(first?.partitions).toMatchObject({ dropped: 1, busy: false });
    const left = await partitionNames(store);
    expect(left).not.toContain(published);
    expect(left).toEqual(expect.arrayContaining([pending, dead, inWindow]));

    // The pending event is published (and deleted); its partition goes at the next pass.
    const publisher = createMemoryPublisher();
    await drain(createRelay({ store, publisher }));
    expect(publisher.published.map((m) => m.messageId)).toEqual(['pending-1']);
    await createRetention({ store }).runOnce();
    expect(await partitionNames(store)).not.toContain(pending);
    expect(await partitionNames(store)).toContain(dead);

    // A dead event stays unless deadLetterRetentionMs says it died long enough ago.
    await createRetention({ store, deadLetterRetentionMs: 8 * DAY }).runOnce();
    expect(await partitionNames(store)).toContain(dead);
    const last = await createRetention({ store, deadLetterRetentionMs: 7 * DAY }).runOnce();
    expect(last.tables.outbox?.partitions?.dropped).toBe(1);
    expect(await partitionNames(store)).not.toContain(dead);
    expect(await messageIds(store)).toEqual(['window-1']);
    await store.knex.raw(`drop table ${store.names.table(inWindow)}`);
  });

  it('a requeued dead event goes back into its partition, pending, with a new id', async () => {
    const old = await pastPartition(store, 'p_requeue', 3 * DAY, 2 * DAY);
    await seedEvent(store, 'r-dead', 2.5 * DAY, 'dead');
    const where = async (): Promise<{ id: string; status: string; part: string }[]> =>
      rowsOf<{ id: string; status: string; part: string }>(
        await store.knex.raw(
          `select id::text as id, status, tableoid::regclass::text as part
             from ${store.names.table('outbox')} where message_id = 'r-dead'`,
        ),
      );
    const [before] = await where();
    const relay = createRelay({ store, publisher: createMemoryPublisher() });
    const id = await relay.requeue(before!.id);
    await relay.stop();
    const [after] = await where();
    expect(after).toMatchObject({ id, status: 'pending' });
    expect(BigInt(after!.id)).toBeGreaterThan(BigInt(before!.id));
    expect(after!.part).toContain(old);
    await store.knex.raw(`delete from ${store.names.table('outbox')}`);
    await store.knex.raw(`drop table ${store.names.table(old)}`);
  });

  it("admin status() counts the partitioned outbox's events as on the plain layout", async () => {
    const old = await pastPartition(store, 'p_status', 3 * DAY, 2 * DAY);
    await seedEvent(store, 's-pending-old', 2.5 * DAY, 'pending');
    await seedEvent(store, 's-dead-old', 2.5 * DAY, 'dead');
    await seedEvent(store, 's-published', HOUR, 'published');
    await seedEvent(store, 's-pending', HOUR, 'pending');
    const status = await createAdmin(store).status();
    const orders = status.outbox.find((d) => d.destination === 'orders');
    expect(orders).toMatchObject({ destination: 'orders', pending: 2, dead: 1 });
    expect(orders!.oldestPendingSeconds).toBeGreaterThan(2 * 24 * 3600);
    expect(status.retention.publishedOutboxRows).toBe(1);
    await store.knex.raw(`delete from ${store.names.table('outbox')}`);
    await store.knex.raw(`drop table ${store.names.table(old)}`);
  });
});

describe('message ids across partitions, property-based (postgres)', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore('postgres', { layout: 'partitioned' });
    await pastPartition(store, 'p_prop2', 3 * DAY, 2 * DAY);
    await pastPartition(store, 'p_prop1', 2 * DAY, DAY);
  });
  afterAll(async () => {
    await store.dispose();
  });

  // Whatever the ids and whichever partitions their events land in (today's through
  // outbox.add, older ones by an insert dated back, as a requeue or a backfill writes), an id
  // is stored once: the first event of it goes in, every later one is refused or skipped.
  it('stores each message id once, whichever partition its events go to', async () => {
    const outbox = createOutbox({ store, notify: false });
    const t = store.names.table('outbox');
    const id = fc.oneof(
      fc.constantFrom('a', 'b', 'ü', '😀', 'a b'),
      fc
        .string({ unit: 'grapheme', minLength: 1, maxLength: 6 })
        .filter((s) => /^[^\p{C}]+$/u.test(s)),
    );
    const events = fc.array(fc.record({ id, day: fc.integer({ min: 0, max: 2 }) }), {
      maxLength: 12,
    });
    await fc.assert(
      fc.asyncProperty(events, async (list) => {
        await store.knex.raw(`delete from ${t}`);
        const seen = new Set<string>();
        for (const { id: messageId, day } of list) {
          let stored: boolean;
          if (day === 0) {
            stored = await store.knex
              .transaction((trx) =>
                outbox.add(trx, { destination: 'prop', messageId, payload: {} }),
              )
              .then(
                () => true,
                (error: unknown) => {
                  if (error instanceof DuplicateMessageIdError) return false;
                  throw error;
                },
              );
          } else {
            const result = await store.knex.raw(
              `insert into ${t} (destination, message_id, payload, created_at)
               values ('prop', ?, '\\x7b7d'::bytea, now() - (? + 0.5) * interval '1 day')
               on conflict do nothing returning id`,
              [messageId, day],
            );
            stored = rowsOf(result).length === 1;
          }
          expect(stored).toBe(!seen.has(messageId));
          seen.add(messageId);
        }
        const [count] = rowsOf<{ n: number; stray: number }>(
          await store.knex.raw(
            `select count(*)::int as n,
                    count(*) filter (where tableoid = to_regclass(?))::int as stray
               from ${t}`,
            [store.names.table('outbox_default')],
          ),
        );
        expect(count!.n).toBe(seen.size);
        // Each event went to its day's partition (today's or one of the two past ones).
        expect(count!.stray).toBe(0);
      }),
      { numRuns: 30 },
    );
  });
});

describe('retention on a plain outbox', () => {
  it('does not report the outbox', async () => {
    const store = await openTestStore('postgres');
    try {
      const result = await createRetention({ store }).runOnce();
      expect(Object.keys(result.tables)).not.toContain('outbox');
    } finally {
      await store.dispose();
    }
  });
});

describe.each(STORE_KINDS)('converting a plain outbox with events on %s', (kind) => {
  it('keeps the old rows and their indexes in one partition, ids increasing, order and dedup kept', async () => {
    const schema = uniqueSchema('pobox');
    const plain = await openTestStore(kind, { schema });
    const outbox = createOutbox({ store: plain });
    await plain.knex.transaction((trx) =>
      outbox.add(
        trx,
        Array.from({ length: 30 }, (_, n) => ({
          destination: 'orders',
          key: `k${n % 3}`,
          messageId: `before-${String(n).padStart(2, '0')}`,
          payload: { n },
        })),
      ),
    );
    // The old table's plain indexes by name without the table (`pending_idx` …): oid.
    const indexOids = async (table: string): Promise<Record<string, number>> =>
      Object.fromEntries(
        rowsOf<{ name: string; oid: number }>(
          await plain.knex.raw(
            `select c.relname as name, c.oid::int as oid
               from pg_index i join pg_class c on c.oid = i.indexrelid
              where i.indrelid = to_regclass(?) and not i.indisunique`,
            [plain.names.table(table)],
          ),
        ).map((r) => [r.name.replace(`${table}_`, ''), r.oid]),
      );
    const [maxBefore] = rowsOf<{ max: string }>(
      await plain.knex.raw(`select max(id)::text as max from ${plain.names.table('outbox')}`),
    );
    const before = await indexOids('outbox');
    const statusBefore = await createAdmin(plain).status();
    // On PGlite, a second store on the same instance.
    const partitioned = await createStore({
      ...(kind === 'postgres' ? { connectionString: databaseUrl() } : { knex: plain.knex }),
      schema,
      layout: 'partitioned',
    });
    try {
      await partitioned.migrate();
      expect(await relkind(plain, 'outbox')).toBe('p');
      expect(await relkind(plain, 'outbox_plain')).toBe('r');
      // The old table's indexes were adopted by the partitioned table's, not built again.
      expect(Object.keys(before)).toHaveLength(5);
      expect(await indexOids('outbox_plain')).toEqual(before);
      expect((await messageIds(plain, 'outbox_plain')).length).toBe(30);
      expect(await createAdmin(partitioned).status()).toMatchObject({
        outbox: statusBefore.outbox.map((d) => ({
          ...d,
          oldestPendingSeconds: expect.any(Number),
        })),
      });

      const late = createOutbox({ store: partitioned });
      await expect(
        partitioned.knex.transaction((trx) =>
          late.add(trx, { destination: 'orders', messageId: 'before-07', payload: {} }),
        ),
      ).rejects.toBeInstanceOf(DuplicateMessageIdError);
      await partitioned.knex.transaction((trx) =>
        late.add(
          trx,
          [0, 1, 2].map((k) => ({ destination: 'orders', key: `k${k}`, payload: { n: 100 + k } })),
        ),
      );
      const [minAfter] = rowsOf<{ min: string }>(
        await plain.knex.raw(
          `select min(id)::text as min from ${plain.names.table('outbox')}
            where message_id not like 'before-%'`,
        ),
      );
      expect(BigInt(minAfter!.min)).toBeGreaterThan(BigInt(maxBefore!.max));

      const publisher = createMemoryPublisher();
      await drain(createRelay({ store: partitioned, publisher }));
      const byKey = new Map<string, number[]>();
      for (const m of publisher.published) {
        const { n } = JSON.parse(Buffer.from(m.payload).toString()) as { n: number };
        byKey.set(m.key ?? '', [...(byKey.get(m.key ?? '') ?? []), n]);
      }
      for (const [, ns] of byKey) expect(ns).toEqual([...ns].sort((a, b) => a - b));
      expect(publisher.published).toHaveLength(33);
    } finally {
      await partitioned.close();
      await plain.dispose();
    }
  });
  it('drops the old table whole once its bound is past the window and its last pending event is out', async () => {
    const schema = uniqueSchema('poboxold');
    const plain = await openTestStore(kind, { schema });
    await seedEvent(plain, 'old-published', 10 * DAY, 'published');
    await seedEvent(plain, 'old-pending', 10 * DAY, 'pending', { key: 'k' });
    const partitioned = await createStore({
      ...(kind === 'postgres' ? { connectionString: databaseUrl() } : { knex: plain.knex }),
      schema,
      layout: 'partitioned',
    });
    try {
      await partitioned.migrate();
      // As if the conversion had happened long ago: its bound eight days back.
      const outbox = partitioned.names.table('outbox');
      const legacy = partitioned.names.table('outbox_plain');
      const bound = rowsOf<{ t: string }>(
        await partitioned.knex.raw(`select (now() - interval '8 days')::text as t`),
      )[0]!.t;
      await partitioned.knex.raw(`alter table ${outbox} detach partition ${legacy}`);
      await partitioned.knex.raw(
        `alter table ${outbox} attach partition ${legacy}
           for values from (MINVALUE) to ('${bound}')`,
      );
      const retention = createRetention({ store: partitioned });
      expect((await retention.runOnce()).tables.outbox?.partitions?.dropped).toBe(0);
      expect(await relkind(partitioned, 'outbox_plain')).toBe('r');
      const publisher = createMemoryPublisher();
      await drain(createRelay({ store: partitioned, publisher }));
      expect(publisher.published.map((m) => m.messageId)).toEqual(['old-pending']);
      expect((await retention.runOnce()).tables.outbox?.partitions?.dropped).toBe(1);
      expect(await relkind(partitioned, 'outbox_plain')).toBeUndefined();
    } finally {
      await partitioned.close();
      await plain.dispose();
    }
  });
});

describe('partition upkeep and drops while outbox writers and a relay run (postgres)', () => {
  // Every lock on the outbox's partitions is taken after the table's (writers insert through
  // it, the trigger reads every partition, a relay's claim locks rows of several): each round
  // leaves published events of an older day in the default partition, so the upkeep has a
  // partition to create behind the others and rows to move, and retention a partition to drop,
  // while four writers add events and a relay publishes them.
  it('neither deadlocks nor fails a write or a relay cycle', async () => {
    const store = await openTestStore('postgres', { layout: 'partitioned' });
    const outbox = createOutbox({ store });
    const publisher = createMemoryPublisher();
    const relayErrors: string[] = [];
    const quiet = (): void => undefined;
    const relay = createRelay({
      store,
      publisher,
      pollIntervalMs: 20,
      logger: { debug: quiet, info: quiet, warn: quiet, error: (m) => relayErrors.push(m) },
    });
    await relay.start();
    const errors: unknown[] = [];
    let writing = true;
    let added = 0;
    const writer = async (w: number): Promise<void> => {
      for (let n = 0; writing; n += 1) {
        try {
          await store.knex.transaction((trx) =>
            outbox.add(trx, { destination: 'upkeep', key: `w${w}`, payload: { n } }),
          );
          added += 1;
        } catch (error) {
          errors.push(error);
        }
      }
    };
    try {
      const writers = [0, 1, 2, 3].map(writer);
      let dropped = 0;
      for (let round = 0; round < 6; round += 1) {
        for (let n = 0; n < 50; n += 1) {
          await seedEvent(
            store,
            `stray-${round}-${n}`,
            (10 + round) * DAY + n * 60_000,
            'published',
          );
        }
        await store.migrate();
        const result = await createRetention({ store }).runOnce();
        dropped += result.tables.outbox?.partitions?.dropped ?? 0;
      }
      writing = false;
      await Promise.all(writers);
      await waitFor(
        'every event to be published',
        () => new Set(publisher.published.map((m) => m.messageId)).size >= added,
        { timeoutMs: 30_000 },
      );
      expect(errors).toEqual([]);
      expect(relayErrors).toEqual([]);
      expect(dropped).toBeGreaterThan(0);
      expect(await messageIds(store, 'outbox_default')).toEqual([]);
    } finally {
      writing = false;
      await relay.stop();
      await store.dispose();
    }
  }, 120_000);
});
