import {
  ConfigurationError,
  createInbox,
  createRetention,
  createStore,
  rowsOf,
  type Store,
  type StoreOptions,
} from '../src';
import { STORE_KINDS, databaseUrl, openTestStore, uniqueSchema } from './db';
import { envelope, freshId } from './fixtures/inbox-support';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** The partitions of `inbox_records`: name and bound text, oldest first, the default last. */
async function partitions(store: Store): Promise<{ name: string; bound: string }[]> {
  const result = await store.knex.raw(
    `select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
       from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = to_regclass(?)
      order by (pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'), c.relname`,
    [store.names.table('inbox_records')],
  );
  return rowsOf<{ name: string; bound: string }>(result);
}

async function relkind(store: Store): Promise<string | undefined> {
  const result = await store.knex.raw(
    `select relkind::text as kind from pg_class where oid = to_regclass(?)`,
    [store.names.table('inbox_records')],
  );
  return rowsOf<{ kind: string }>(result)[0]?.kind;
}

/** Adds a range partition for `[fromAgoMs, toAgoMs)` before now, as if made long ago. */
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
  const name = `inbox_records_${suffix}`;
  await store.knex.raw(
    `create table ${store.names.table(name)} partition of ${store.names.table('inbox_records')}
       for values from ('${await at(fromAgoMs)}') to ('${await at(toAgoMs)}')`,
  );
  return name;
}

/** Inserts an inbox record written `agoMs` ago that expires `expiresInMs` from now. */
async function seed(
  store: Store,
  messageId: string,
  agoMs: number,
  expiresInMs: number,
  consumer = 'seeded',
): Promise<void> {
  await store.knex.raw(
    `insert into ${store.names.table('inbox_records')}
       (consumer, scope, message_id, status, fingerprint, created_at, expires_at)
     values (?, 'default', ?, 'SUCCEEDED', null,
             now() - ?::double precision * interval '1 millisecond',
             now() + ?::double precision * interval '1 millisecond')`,
    [consumer, messageId, agoMs, expiresInMs],
  );
}

async function messageIds(store: Store, table = 'inbox_records'): Promise<string[]> {
  const result = await store.knex.raw(
    `select message_id from ${store.names.table(table)} order by message_id`,
  );
  return rowsOf<{ message_id: string }>(result).map((r) => r.message_id);
}

/**
 * A migrated store in a schema of its own on the same database as `store` (on PGlite, the same
 * instance: starting another takes seconds).
 */
async function besideStore(
  store: TestStore,
  options: Pick<StoreOptions, 'layout' | 'partitions' | 'schema'>,
): Promise<Store & { dispose(): Promise<void> }> {
  const schema = options.schema ?? uniqueSchema('beside');
  const opened = await createStore({
    ...(store.dialect === 'postgres' ? { connectionString: databaseUrl() } : { knex: store.knex }),
    ...options,
    schema,
  });
  await opened.migrate();
  return Object.assign(opened, {
    dispose: async () => {
      if (options.schema === undefined) {
        await opened.knex.raw(`drop schema if exists "${schema}" cascade`);
      }
      await opened.close();
    },
  });
}

describe('store layout options', () => {
  it('refuses an unknown layout, bad partition settings and unknown partition keys', async () => {
    await expect(createStore({ layout: 'sharded' as never })).rejects.toThrow(ConfigurationError);
    await expect(createStore({ partitions: { intervalMs: 1000 } })).rejects.toThrow(
      /partitions\.intervalMs/,
    );
    await expect(createStore({ partitions: { ahead: 0 } })).rejects.toThrow(/partitions\.ahead/);
    await expect(createStore({ partitions: { aheadd: 2 } as never })).rejects.toThrow(/ahead/);
    // The layout's longest name (an index of the table a live conversion keeps) must fit.
    await expect(
      createStore({ layout: 'partitioned', tablePrefix: 'p'.repeat(24), knex: {} as never }),
    ).rejects.toThrow(ConfigurationError);
  });
});

describe.each(STORE_KINDS)('partitioned layout on %s', (kind) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore(kind, { layout: 'partitioned', partitions: { ahead: 2 } });
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('migrate() creates inbox_records partitioned by day, ahead, with a default partition', async () => {
    expect(store.layout).toBe('partitioned');
    expect(await relkind(store)).toBe('p');
    const parts = await partitions(store);
    // The current day and two ahead (a third when now is past midnight's boundary), the default.
    expect(parts.at(-1)).toEqual({ name: 'inbox_records_default', bound: 'DEFAULT' });
    expect(parts.length).toBeGreaterThanOrEqual(4);
    expect(parts[0]!.name).toMatch(/^inbox_records_p\d{8}0000$/);
    // Idempotent: a second migrate changes nothing.
    await store.migrate();
    expect(await partitions(store)).toEqual(parts);
  });

  it('a message whose record is in another partition is a duplicate', async () => {
    const inbox = createInbox({ store, consumer: 'dup' });
    await pastPartition(store, 'dup_past', 3 * DAY, 2 * DAY);
    const old = freshId('old');
    // The record of an earlier delivery, written two days ago (into that partition), with the
    // fingerprint the inbox gives this payload.
    await createInbox({ store, consumer: 'probe' }).process(envelope(old), async () => undefined);
    await store.knex.raw(
      `insert into ${store.names.table('inbox_records')}
         (consumer, scope, message_id, status, fingerprint, created_at, expires_at)
       select 'dup', scope, message_id, status, fingerprint, now() - interval '2 days 1 hour',
              now() + interval '1 day'
         from ${store.names.table('inbox_records')} where consumer = 'probe'`,
    );
    let runs = 0;
    const handler = async (): Promise<void> => {
      runs += 1;
    };
    expect((await inbox.process(envelope(old), handler)).status).toBe('duplicate');
    const fresh = freshId('fresh');
    expect((await inbox.process(envelope(fresh), handler)).status).toBe('processed');
    expect((await inbox.process(envelope(fresh), handler)).status).toBe('duplicate');
    expect(runs).toBe(1);
  });

  it('the dedup trigger refuses a key another partition holds, in the same statement too', async () => {
    const id = freshId('trigger');
    await seed(store, id, 2 * DAY + HOUR, DAY, 'trigger');
    const insert = await store.knex.raw(
      `insert into ${store.names.table('inbox_records')}
         (consumer, scope, message_id, status, expires_at)
       values ('trigger', 'default', ?, 'SUCCEEDED', now() + interval '1 day'),
              ('trigger', 'default', ?, 'SUCCEEDED', now() + interval '1 day'),
              ('trigger', 'default', ?, 'SUCCEEDED', now() + interval '1 day')
       on conflict do nothing returning message_id`,
      [id, `${id}-new`, `${id}-new`],
    );
    expect(rowsOf<{ message_id: string }>(insert).map((r) => r.message_id)).toEqual([`${id}-new`]);
  });

  it('retention drops whole partitions past the window and expiry, and deletes rows only where it must', async () => {
    const schemaStore = await besideStore(store, {
      layout: 'partitioned',
      partitions: { ahead: 2 },
    });
    try {
      // gone: written 10-9 days ago, all expired. kept: 10-9 days... one record not expired.
      // recent: inside the 7-day window. The default partition gets what no range covers.
      const gone = await pastPartition(schemaStore, 'gone', 20 * DAY, 19 * DAY);
      const kept = await pastPartition(schemaStore, 'kept', 19 * DAY, 18 * DAY);
      await pastPartition(schemaStore, 'recent', 2 * DAY, DAY);
      await seed(schemaStore, 'gone-1', 19 * DAY + HOUR, -DAY);
      await seed(schemaStore, 'gone-2', 19 * DAY + 2 * HOUR, -HOUR);
      await seed(schemaStore, 'kept-expired', 18 * DAY + HOUR, -DAY);
      await seed(schemaStore, 'kept-live', 18 * DAY + 2 * HOUR, DAY);
      await seed(schemaStore, 'recent-expired', DAY + HOUR, -HOUR);
      await seed(schemaStore, 'default-expired', 30 * DAY, -DAY);
      await seed(schemaStore, 'default-live', 31 * DAY, DAY);
      const retention = createRetention({ store: schemaStore, retentionMs: 7 * DAY });
      const result = await retention.runOnce();
      // The default partition's rows, older than the first range, moved into partitions of
      // their own first (created behind it), dropped whole with `gone` but for default-live's.
      expect(result.tables.inbox_records).toMatchObject({
        deleted: 1, // kept-expired, row by row
        complete: true,
        partitions: { busy: false },
      });
      expect(result.tables.inbox_records.partitions!.dropped).toBeGreaterThanOrEqual(2);
      expect(result.tables.inbox_records.partitions!.created).toBeGreaterThanOrEqual(2);
      expect(await messageIds(schemaStore)).toEqual([
        'default-live',
        'kept-live',
        'recent-expired',
      ]);
      expect(await messageIds(schemaStore, 'inbox_records_default')).toEqual([]);
      const names = (await partitions(schemaStore)).map((p) => p.name);
      expect(names).not.toContain(gone);
      expect(names).toContain(kept);
      // A second pass finds nothing to do.
      const again = await retention.runOnce();
      expect(again.tables.inbox_records).toMatchObject({
        deleted: 0,
        partitions: { dropped: 0, created: 0 },
      });
    } finally {
      await schemaStore.dispose();
    }
  });

  it('a converted table keeps its old rows in one partition, cleaned row by row until it can go whole', async () => {
    const schema = uniqueSchema('legacy');
    const plain = await besideStore(store, { schema });
    try {
      await seed(plain, 'legacy-expired', 10 * DAY, -DAY);
      await seed(plain, 'legacy-live', 10 * DAY, DAY);
      const converted = await besideStore(store, { schema, layout: 'partitioned' });
      try {
        expect(await relkind(converted)).toBe('p');
        expect(await messageIds(converted, 'inbox_records_plain')).toEqual([
          'legacy-expired',
          'legacy-live',
        ]);
        const result = await createRetention({ store: converted, retentionMs: 7 * DAY }).runOnce();
        expect(result.tables.inbox_records).toMatchObject({
          deleted: 1,
          partitions: { dropped: 0 },
        });
        expect(await messageIds(converted)).toEqual(['legacy-live']);
      } finally {
        await converted.close();
      }
    } finally {
      await plain.knex.raw(`drop schema if exists "${schema}" cascade`);
      await plain.dispose();
    }
  });

  it('a conversion that fails leaves the table plain and without its bound check', async () => {
    const schema = uniqueSchema('failed');
    const plain = await besideStore(store, { schema });
    const converting = await createStore({
      ...(kind === 'postgres' ? { connectionString: databaseUrl() } : { knex: store.knex }),
      schema,
      layout: 'partitioned',
    });
    try {
      await seed(plain, 'before', HOUR, DAY);
      // The name the old table would take is in use: the swap fails.
      await plain.knex.raw(`create table ${plain.names.table('inbox_records_plain')} (x int)`);
      await expect(converting.migrate()).rejects.toThrow(/inbox_records_plain/);
      expect(await relkind(plain)).toBe('r');
      const bound = await plain.knex.raw(
        `select count(*)::int as n from pg_constraint
          where conrelid = to_regclass(?) and conname = 'inbox_records_plain_bound'`,
        [plain.names.table('inbox_records')],
      );
      expect(rowsOf<{ n: number }>(bound)[0]!.n).toBe(0);
      // A record written past the bound the conversion chose goes in.
      await seed(plain, 'far', -30 * DAY, DAY);
      expect(await messageIds(plain)).toEqual(['before', 'far']);
    } finally {
      await converting.close();
      await plain.knex.raw(`drop schema if exists "${schema}" cascade`);
      await plain.dispose();
    }
  });

  it('creates partitions ahead again, moving rows the default partition took for their range', async () => {
    const far = store.partitions.intervalMs * 6;
    await seed(store, 'stray', -far, DAY, 'stray');
    expect(await messageIds(store, 'inbox_records_default')).toContain('stray');
    const wider = await createStore({
      ...(kind === 'postgres' ? { connectionString: databaseUrl() } : { knex: store.knex }),
      schema: store.schema,
      layout: 'partitioned',
      partitions: { ahead: 8 },
    });
    try {
      // The retention job creates the partitions ahead (so would migrate()).
      const result = await createRetention({ store: wider }).runOnce();
      expect(result.tables.inbox_records.partitions?.created).toBeGreaterThanOrEqual(5);
      expect(await messageIds(store, 'inbox_records_default')).not.toContain('stray');
      expect(await messageIds(store)).toContain('stray');
    } finally {
      await wider.close();
    }
  });
});

describe('a plain store on a partitioned schema', () => {
  it('works without converting back, and its retention drops partitions too', async () => {
    const schema = uniqueSchema('mixed');
    const partitioned = await openTestStore('postgres', { schema, layout: 'partitioned' });
    const plain = await createStore({ connectionString: databaseUrl(), schema });
    try {
      await plain.migrate();
      expect(await relkind(plain)).toBe('p');
      const inbox = createInbox({ store: plain, consumer: 'mixed' });
      const id = freshId();
      expect((await inbox.process(envelope(id), async () => undefined)).status).toBe('processed');
      expect((await inbox.process(envelope(id), async () => undefined)).status).toBe('duplicate');
      const result = await createRetention({ store: plain }).runOnce();
      expect(result.tables.inbox_records.partitions).toBeDefined();
    } finally {
      await plain.close();
      await partitioned.dispose();
    }
  });
});

describe('the partitioned layout with a table prefix (postgres)', () => {
  it('prefixes the partitions, the trigger and the old table, and works the same', async () => {
    const schema = uniqueSchema('prefix');
    const plain = await openTestStore('postgres', { schema, tablePrefix: 'jo_' });
    try {
      await seed(plain, 'old', HOUR, DAY);
      const converted = await createStore({
        connectionString: databaseUrl(),
        schema,
        tablePrefix: 'jo_',
        layout: 'partitioned',
      });
      try {
        await converted.migrate();
        const names = (await partitions(converted)).map((p) => p.name);
        expect(names).toContain('jo_inbox_records_plain');
        expect(names.at(-1)).toBe('jo_inbox_records_default');
        expect(names.every((n) => n.startsWith('jo_inbox_records_'))).toBe(true);
        const inbox = createInbox({ store: converted, consumer: 'prefixed' });
        const id = freshId();
        expect((await inbox.process(envelope(id), async () => undefined)).status).toBe('processed');
        expect((await inbox.process(envelope(id), async () => undefined)).status).toBe('duplicate');
        const result = await createRetention({ store: converted }).runOnce();
        expect(result.tables.inbox_records.partitions?.busy).toBe(false);
      } finally {
        await converted.close();
      }
    } finally {
      await plain.dispose();
    }
  });
});

describe('the dedup key across partitions under concurrent writers (postgres)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore('postgres', { layout: 'partitioned' });
    await pastPartition(store, 'race_past', 3 * DAY, 2 * DAY);
  });
  afterAll(async () => {
    await store.dispose();
  });

  /** An insert of `id`'s record, as the inbox's claim does, `agoMs` back (another partition). */
  const insert = (db: Store['knex'], id: string, agoMs: number): Promise<string[]> =>
    Promise.resolve(
      db.raw(
        `insert into ${store.names.table('inbox_records')}
           (consumer, scope, message_id, status, created_at, expires_at)
         values ('race', 'default', ?, 'SUCCEEDED',
                 now() - ?::double precision * interval '1 millisecond', now() + interval '1 day')
         on conflict do nothing returning message_id`,
        [id, agoMs],
      ),
    ).then((result) => rowsOf<{ message_id: string }>(result).map((r) => r.message_id));

  it.each([
    ['commits', 'a conflict (no row)', []],
    ['rolls back', 'the insert', ['id']],
  ] as const)(
    'an insert into one partition waits for an uncommitted one of the same key in another; when that %s it gets %s',
    async (ending, _what, expected) => {
      const id = freshId(`race-${ending === 'commits' ? 'c' : 'r'}`);
      const trx = await store.knex.transaction();
      expect(await insert(trx, id, 2 * DAY + HOUR)).toEqual([id]);
      let settled = false;
      const second = insert(store.knex, id, 0).then((rows) => {
        settled = true;
        return rows;
      });
      // It waits on the key's lock, not on the partition's unique index.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(settled).toBe(false);
      if (ending === 'commits') await trx.commit();
      else await trx.rollback();
      expect(await second).toEqual(expected.map(() => id));
    },
  );
});

describe('partition upkeep while the inbox writes (postgres)', () => {
  // Upkeep that moves rows out of the default partition locked it before the table; inserts
  // hold the table and read the default partition (the dedup trigger's lookup), so the two
  // deadlocked. Each round leaves rows from an older day in the default partition, so each
  // upkeep has a partition to create behind the others and rows to move, while four writers
  // handle new messages.
  it('neither deadlocks nor fails a delivery', async () => {
    const store = await openTestStore('postgres', { layout: 'partitioned' });
    const inbox = createInbox({ store, consumer: 'upkeep-writers', retentionMs: 30 * DAY });
    const errors: unknown[] = [];
    let writing = true;
    const writer = async (): Promise<number> => {
      let handled = 0;
      while (writing) {
        try {
          await inbox.process(envelope(freshId()), async () => undefined);
          handled += 1;
        } catch (error) {
          errors.push(error);
        }
      }
      return handled;
    };
    try {
      const writers = [writer(), writer(), writer(), writer()];
      for (let round = 0; round < 6; round += 1) {
        for (let n = 0; n < 50; n += 1) {
          await seed(store, `stray-${round}-${n}`, (10 + round) * DAY + n * MINUTE, 60 * DAY);
        }
        await store.migrate();
      }
      writing = false;
      expect(Math.min(...(await Promise.all(writers)))).toBeGreaterThan(0);
      expect(errors).toEqual([]);
      expect(await messageIds(store, 'inbox_records_default')).toEqual([]);
    } finally {
      writing = false;
      await store.dispose();
    }
  }, 120_000);
});
