import fc from 'fast-check';
import {
  ConfigurationError,
  FinalError,
  createAdmin,
  createInbox,
  createMemoryPublisher,
  createOutbox,
  createRelay,
  createStore,
  rowsOf,
  type Store,
} from '../src';
import { STORE_KINDS, databaseUrl, openTestStore, uniqueSchema } from './db';
import { envelope } from './fixtures/inbox-support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/**
 * The column each table would be distributed by (docs/scaling.md, "Table by table"). A table
 * justonce creates that is missing here fails the test: a new table needs its row in the doc.
 */
const DISTRIBUTED_BY: Record<string, string> = {
  idempotency: 'scope',
  inbox_records: 'scope',
  inbox_attempts: 'scope',
  dead_letters: 'scope',
  inbox_offsets: 'consumer',
  consumer_activity: 'consumer',
  consumer_resilience: 'consumer',
  outbox: 'distribution_key',
};

/** Every unique index of every table of the store's schema, with its columns. */
async function uniqueKeys(
  store: Store,
): Promise<{ table: string; index: string; columns: string[] }[]> {
  const result = await store.knex.raw(
    `select t.relname as "table", i.relname as "index",
            array(select a.attname::text from unnest(x.indkey) k
                    join pg_attribute a on a.attrelid = t.oid and a.attnum = k) as columns
       from pg_index x
       join pg_class t on t.oid = x.indrelid
       join pg_class i on i.oid = x.indexrelid
       join pg_namespace n on n.oid = t.relnamespace
      where n.nspname = ? and x.indisunique
      order by 1, 2`,
    [store.schema],
  );
  return rowsOf<{ table: string; index: string; columns: string[] }>(result);
}

/** The unique keys that lack their table's distribution column (the migrations table aside). */
async function keysWithoutDistributionColumn(store: Store): Promise<string[]> {
  const missing: string[] = [];
  for (const key of await uniqueKeys(store)) {
    if (key.table === 'migrations') continue;
    const column = DISTRIBUTED_BY[key.table];
    if (column === undefined || !key.columns.includes(column)) {
      missing.push(`${key.table}.${key.index} (${key.columns.join(', ')})`);
    }
  }
  return missing;
}

async function outboxRows(
  store: Store,
): Promise<{ message_id: string; partition_key: string | null; distribution_key: string }[]> {
  const result = await store.knex.raw(
    `select message_id, partition_key, distribution_key from ${store.names.table('outbox')}
      order by id`,
  );
  return rowsOf(result);
}

describe('createStore({ distribution })', () => {
  it('refuses an unknown value and the partitioned layout, before connecting', async () => {
    const connectionString = databaseUrl();
    for (const distribution of ['citus', true, '', 'DISTRIBUTABLE', {}]) {
      await expect(
        createStore({ connectionString, distribution: distribution as never }),
      ).rejects.toBeInstanceOf(ConfigurationError);
    }
    await expect(
      createStore({ connectionString, distribution: 'distributable', layout: 'partitioned' }),
    ).rejects.toThrow(/cannot be combined with layout 'partitioned'/);
    const plain = await createStore({ connectionString, distribution: 'none' });
    expect(plain.distribution).toBe('none');
    await plain.close();
  });
});

describe.each(STORE_KINDS)('the distributable schema on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind, { distribution: 'distributable' });
  });
  afterAll(async () => {
    await store.dispose();
  });
  beforeEach(async () => {
    await store.knex.raw(`delete from ${store.names.table('outbox')}`);
  });

  it('gives every unique key of every table its distribution column; the plain schema does not', async () => {
    expect(await keysWithoutDistributionColumn(store)).toEqual([]);
    const tables = new Set((await uniqueKeys(store)).map((k) => k.table));
    tables.delete('migrations');
    expect([...tables].sort()).toEqual(Object.keys(DISTRIBUTED_BY).sort());

    const plain = await openTestStore(kind);
    try {
      expect(await keysWithoutDistributionColumn(plain)).toEqual([
        'dead_letters.dead_letters_pkey (id)',
        'outbox.outbox_message_id_key (message_id)',
        'outbox.outbox_pkey (id)',
      ]);
    } finally {
      await plain.dispose();
    }
  });

  it('keeps a message id unique per distribution key, and a keyless id unique', async () => {
    const outbox = createOutbox({ store });
    await store.knex.transaction((trx) =>
      outbox.add(trx, [
        { destination: 'd', key: 'k1', payload: 1, messageId: 'same' },
        { destination: 'd', payload: 2, messageId: 'loose' },
      ]),
    );
    for (const again of [
      { destination: 'd', key: 'k1', payload: 3, messageId: 'same' },
      { destination: 'd', payload: 4, messageId: 'loose' },
    ]) {
      await store.knex.transaction(async (trx) => {
        await expect(outbox.add(trx, again)).rejects.toMatchObject({
          code: 'DUPLICATE_MESSAGE_ID',
          messageIds: [again.messageId],
        });
        await trx.raw('select 1');
      });
    }
    // Under another key, the same id is another row: uniqueness stops at the shard key.
    await store.knex.transaction((trx) =>
      outbox.add(trx, { destination: 'd', key: 'k2', payload: 5, messageId: 'same' }),
    );
    expect(await outboxRows(store)).toEqual([
      { message_id: 'same', partition_key: 'k1', distribution_key: 'k1' },
      { message_id: 'loose', partition_key: null, distribution_key: 'loose' },
      { message_id: 'same', partition_key: 'k2', distribution_key: 'k2' },
    ]);
    const publisher = createMemoryPublisher();
    const relay = createRelay({ store, publisher, notify: false });
    while ((await relay.runOnce()).claimed > 0);
    expect(publisher.published.map((m) => `${m.key}/${m.messageId}`).sort()).toEqual([
      'k1/same',
      'k2/same',
      'null/loose',
    ]);
  });

  it('stores each event under its key, or its id when keyless, and refuses it again there', async () => {
    const outbox = createOutbox({ store });
    // Text the outbox accepts: no U+0000, no leading U+FEFF, at most 255 UTF-8 bytes.
    const text = fc
      .string({ unit: 'grapheme', minLength: 1, maxLength: 16 })
      .filter((s) => !s.includes('\u0000') && !s.startsWith('\uFEFF'));
    await fc.assert(
      fc.asyncProperty(fc.option(text, { nil: null }), text, async (key, messageId) => {
        await store.knex.raw(`delete from ${store.names.table('outbox')}`);
        const event = { destination: 'd', key, payload: 'x', messageId };
        await store.knex.transaction((trx) => outbox.add(trx, event));
        const [row] = await outboxRows(store);
        expect(row).toEqual({
          message_id: messageId,
          partition_key: key,
          distribution_key: key ?? messageId,
        });
        await store.knex.transaction(async (trx) => {
          await expect(outbox.add(trx, event)).rejects.toMatchObject({
            code: 'DUPLICATE_MESSAGE_ID',
          });
        });
      }),
      { numRuns: 40 },
    );
  });

  it('refuses an add on a schema not converted yet, naming the migration', async () => {
    const schema = uniqueSchema('early');
    const early = await createStore(
      kind === 'postgres'
        ? { connectionString: databaseUrl(), schema, distribution: 'distributable' }
        : { pglite: {}, schema, distribution: 'distributable' },
    );
    // A plain migrate of the same schema, as a process that skipped its own migrate() sees it.
    const plain = await createStore(
      kind === 'postgres'
        ? { connectionString: databaseUrl(), schema }
        : { pglite: { instance: early.pglite! }, schema },
    );
    try {
      await plain.migrate();
      const refused = await early.knex
        .transaction((trx) =>
          createOutbox({ store: early }).add(trx, { destination: 'd', payload: 1 }),
        )
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ConfigurationError);
      expect((refused as Error).message).toMatch(/run store.migrate\(\)/);
    } finally {
      if (kind === 'postgres') await plain.knex.raw(`drop schema if exists "${schema}" cascade`);
      await plain.close();
      await early.close();
    }
  });

  it('requeues and redelivers from a store opened without the option (the CLI, the dashboard)', async () => {
    const outbox = createOutbox({ store });
    await store.knex.transaction((trx) =>
      outbox.add(trx, [
        { destination: 'd', key: 'k', payload: 1, messageId: 'keyed' },
        { destination: 'd', payload: 2, messageId: 'keyless' },
      ]),
    );
    await store.knex.raw(`update ${store.names.table('outbox')} set status = 'dead'`);
    const operator = await createStore(
      kind === 'postgres'
        ? { connectionString: databaseUrl(), schema: store.schema }
        : { pglite: { instance: store.pglite! }, schema: store.schema },
    );
    try {
      const admin = createAdmin(operator);
      const relay = createRelay({ store: operator, publisher: createMemoryPublisher() });
      const dead = await relay.listDead();
      expect(await relay.requeue(dead[0]!.id)).not.toBeNull();
      expect(await admin.outbox.requeue(dead[1]!.id)).not.toBeNull();
      expect(await outboxRows(store)).toEqual([
        { message_id: 'keyed', partition_key: 'k', distribution_key: 'k' },
        { message_id: 'keyless', partition_key: null, distribution_key: 'keyless' },
      ]);

      const inbox = createInbox({ store, consumer: 'billing' });
      await inbox.process(envelope('letter-1'), () => {
        throw new FinalError('not yet');
      });
      const [letter] = await admin.deadLetters.list({ consumer: 'billing' });
      await admin.redeliverDeadLetter(letter!.id, { destination: 'orders' });
      expect((await outboxRows(store)).at(-1)).toEqual({
        message_id: 'letter-1',
        partition_key: null,
        distribution_key: 'letter-1',
      });
    } finally {
      await operator.close();
    }
  });
});

describe.each(STORE_KINDS)('migrate() with distribution on a plain schema on %s', (kind) => {
  it('converts it once, keeping its rows, and a store without the option cannot add', async () => {
    const schema = uniqueSchema('dist');
    const plain = await openTestStore(kind, { schema });
    const pglite = kind === 'pglite' ? plain.pglite : undefined;
    const open = (distribution: 'none' | 'distributable') =>
      createStore(
        pglite === undefined
          ? { connectionString: databaseUrl(), schema, distribution }
          : { pglite: { instance: pglite }, schema, distribution },
      );
    try {
      await plain.knex.transaction((trx) =>
        createOutbox({ store: plain }).add(trx, [
          { destination: 'd', key: 'k', payload: 1, messageId: 'a' },
          { destination: 'd', payload: 2, messageId: 'b' },
        ]),
      );
      const stores = [await open('distributable'), await open('distributable')];
      try {
        // Two migrators at once on PostgreSQL; one after the other on PGlite's one session.
        if (kind === 'postgres') await Promise.all(stores.map((s) => s.migrate()));
        else for (const s of stores) await s.migrate();
        expect(await keysWithoutDistributionColumn(stores[0]!)).toEqual([]);
        expect(await outboxRows(stores[0]!)).toEqual([
          { message_id: 'a', partition_key: 'k', distribution_key: 'k' },
          { message_id: 'b', partition_key: null, distribution_key: 'b' },
        ]);
        await stores[0]!.migrate();
        // A process still running without the option is refused, naming the option.
        const refused = await plain.knex
          .transaction((trx) =>
            createOutbox({ store: plain }).add(trx, { destination: 'd', payload: 3 }),
          )
          .catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(ConfigurationError);
        expect((refused as Error).message).toMatch(/open the store with distribution/);
      } finally {
        for (const s of stores) await s.close();
      }
    } finally {
      await plain.dispose();
    }
  });

  it('refuses a schema a partitioned store converted, changing nothing', async () => {
    const schema = uniqueSchema('distpart');
    const partitioned = await openTestStore(kind, { schema, layout: 'partitioned' });
    const distributable = await createStore(
      kind === 'postgres'
        ? { connectionString: databaseUrl(), schema, distribution: 'distributable' }
        : { pglite: { instance: partitioned.pglite! }, schema, distribution: 'distributable' },
    );
    try {
      const before = await keysWithoutDistributionColumn(partitioned);
      await expect(distributable.migrate()).rejects.toThrow(/needs the plain layout/);
      expect(await keysWithoutDistributionColumn(partitioned)).toEqual(before);
    } finally {
      await distributable.close();
      await partitioned.dispose();
    }
  });
});
