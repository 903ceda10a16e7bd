import {
  createInbox,
  createMemoryPublisher,
  createOperations,
  createOutbox,
  createRelay,
  createStore,
  rowsOf,
  type Envelope,
  type OutboxEvent,
  type Store,
} from '../src';
import { databaseUrl, openTestStore } from './db';
import { envelope } from './fixtures/inbox-support';

interface PreparedRow {
  name: string;
  statement: string;
  runs: number;
}

/** The named statements of the connection this query runs on. */
async function preparedStatements(store: Store): Promise<PreparedRow[]> {
  return rowsOf<PreparedRow>(
    await store.knex.raw(
      `select name, statement, (generic_plans + custom_plans)::int as runs
       from pg_prepared_statements order by name`,
    ),
  );
}

/**
 * Outbox work that runs each kind of relay statement: a held claim over a key with more
 * events than a batch (claim, followers, marks), a payload too large to travel packed, and a
 * key whose publish fails (the failure mark).
 */
async function relayWork(store: Store): Promise<void> {
  const events: OutboxEvent[] = [
    ...Array.from({ length: 6 }, (_, n) => ({ destination: 'd', key: 'many', payload: { n } })),
    { destination: 'd', key: 'large', payload: { text: 'x'.repeat(2_000) } },
    { destination: 'd', key: 'bad', payload: { n: 0 } },
  ];
  await store.knex.transaction((trx) => createOutbox({ store }).add(trx, events));
  const publisher = createMemoryPublisher();
  publisher.failKey('bad');
  const relay = createRelay({ store, publisher, batchSize: 3, backoff: { baseMs: 0, capMs: 0 } });
  for (let i = 0; i < 10 && publisher.published.length < 7; i += 1) await relay.runOnce();
  // A claim takes the keys its batch needs: `bad` (and its failure record) comes after.
  expect((await relay.runOnce()).failed).toBe(1);
  expect(publisher.published.map((m) => m.key).sort()).toEqual([
    'large',
    ...Array.from({ length: 6 }, () => 'many'),
  ]);
}

describe('prepared statements on postgres', () => {
  it("parses each of the relay's statements once per connection and reuses it", async () => {
    // One connection, so every statement below runs on the session that is inspected.
    const store = await openTestStore('postgres', { pool: { min: 1, max: 1 } });
    try {
      expect(store.preparedStatements).toBe(true);
      await relayWork(store);
      const first = await preparedStatements(store);
      expect(first.length).toBeGreaterThan(0);
      for (const { name } of first) expect(name).toMatch(/^justonce_[0-9a-f]{32}(_\d+)?$/);
      const t = store.names.table('outbox');
      const kinds = {
        claim: (s: string) => s.includes('window_rows'),
        followers: (s: string) => s.includes('with held as materialized'),
        delete: (s: string) => s.startsWith(`delete from ${t}`),
        failed: (s: string) => s.includes('last_error = f.error'),
        large: (s: string) => s.startsWith('select id::text as id, payload'),
      };
      for (const [kind, is] of Object.entries(kinds)) {
        expect([kind, first.filter((row) => is(row.statement)).length]).toEqual([kind, 1]);
      }

      await relayWork(store);
      const second = await preparedStatements(store);
      // The same statements again, not new ones, each run more times.
      expect(second.map((row) => row.name)).toEqual(first.map((row) => row.name));
      const deletes = second.find((row) => kinds.delete(row.statement))!;
      const before = first.find((row) => row.name === deletes.name)!;
      expect(deletes.runs).toBeGreaterThan(before.runs);
    } finally {
      await store.dispose();
    }
  });

  it('prepares its statements afresh after the server lost them, one failed cycle later', async () => {
    const store = await openTestStore('postgres', { pool: { min: 1, max: 1 } });
    try {
      const add = (key: string) =>
        store.knex.transaction((trx) =>
          createOutbox({ store }).add(trx, { destination: 'd', key, payload: { key } }),
        );
      const publisher = createMemoryPublisher();
      const relay = createRelay({ store, publisher });
      await add('first');
      expect(await relay.runOnce()).toMatchObject({ published: 1 });
      // What a pooler's DISCARD ALL does: the driver still believes them prepared.
      await store.knex.raw('deallocate all');
      await add('after');
      await expect(relay.runOnce()).rejects.toMatchObject({ code: '26000' });
      expect(await relay.runOnce()).toMatchObject({ published: 1 });
      expect(publisher.published.map((m) => m.key)).toEqual(['first', 'after']);
      expect((await preparedStatements(store)).length).toBeGreaterThan(0);
    } finally {
      await store.dispose();
    }
  });

  it("prepares an operation's reserve and completion, and runs them again at once after the server lost them", async () => {
    const store = await openTestStore('postgres', { pool: { min: 1, max: 1 } });
    try {
      const ops = createOperations({ store, operation: 'charge' });
      expect(await ops.run('k1', { n: 1 }, async () => 'one')).toBe('one');
      const t = store.names.table('idempotency');
      const ours = (rows: PreparedRow[]) =>
        rows.filter((row) => row.statement.includes(t)).map((row) => row.statement.split(/\s+/)[0]);
      expect(ours(await preparedStatements(store)).sort()).toEqual(['insert', 'update']);
      // What a pooler's DISCARD ALL does: the driver still believes them prepared. The
      // reserve and the completion run on their own, so they run again under new names.
      await store.knex.raw('deallocate all');
      expect(await ops.run('k2', { n: 2 }, async () => 'two')).toBe('two');
      expect(await ops.run('k1', { n: 1 }, async () => 'again')).toBe('one');
      expect(ours(await preparedStatements(store)).sort()).toEqual(['insert', 'update']);
    } finally {
      await store.dispose();
    }
  });

  it("prepares the inbox's claim of a message, and prepares it again after the server lost it", async () => {
    const store = await openTestStore('postgres', { pool: { min: 1, max: 1 } });
    try {
      const inbox = createInbox({ store, consumer: 'prepared' });
      const handled: string[] = [];
      // First deliveries as a broker reports them: no attempt is counted before the claim.
      const first = { delivery: { redelivered: false } };
      const handle = (id: string, extra: Partial<Envelope> = first) =>
        inbox.process(envelope(id, undefined, extra), async ({ messageId }) => {
          handled.push(messageId);
        });
      expect(await handle('m1')).toMatchObject({ status: 'processed' });
      const records = store.names.table('inbox_records');
      const claims = async () =>
        (await preparedStatements(store)).filter((row) =>
          row.statement.includes(`insert into ${records}`),
        );
      expect(await claims()).toHaveLength(1);
      // What a pooler's DISCARD ALL does. The claim runs in the message's transaction, which
      // it fails: the delivery throws (the transport redelivers it), nothing is committed,
      // and the next delivery prepares the claim again.
      await store.knex.raw('deallocate all');
      await expect(handle('m2')).rejects.toMatchObject({ code: '26000' });
      expect(await handle('m2')).toMatchObject({ status: 'processed' });
      expect(await handle('m2')).toMatchObject({ status: 'duplicate' });
      expect(handled).toEqual(['m1', 'm2']);
      expect(await claims()).toHaveLength(1);
      // A delivery whose attempt is counted meets the lost statement first in the count,
      // which runs on its own: it runs again under a new name, and so does the claim.
      await store.knex.raw('deallocate all');
      expect(await handle('m3', {})).toMatchObject({ status: 'processed' });
      expect(handled).toEqual(['m1', 'm2', 'm3']);
      const attempts = store.names.table('inbox_attempts');
      const counts = (await preparedStatements(store)).filter((row) =>
        row.statement.includes(`insert into ${attempts}`),
      );
      expect(counts).toHaveLength(1);
    } finally {
      await store.dispose();
    }
  });

  it('sends plain statements when told not to prepare them', async () => {
    const store = await openTestStore('postgres', {
      pool: { min: 1, max: 1 },
      preparedStatements: false,
    });
    try {
      expect(store.preparedStatements).toBe(false);
      await relayWork(store);
      expect(await preparedStatements(store)).toEqual([]);
    } finally {
      await store.dispose();
    }
  });
});

describe('preparedStatements option', () => {
  it('is ignored on PGlite', async () => {
    const store = await createStore({ pglite: {}, preparedStatements: true });
    try {
      expect(store.preparedStatements).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('refuses a value that is not a boolean', async () => {
    await expect(
      createStore({
        connectionString: databaseUrl(),
        preparedStatements: 'yes' as unknown as boolean,
      }),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});
