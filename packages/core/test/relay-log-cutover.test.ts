import { createMemoryPublisher, ConfigurationError, createRelay, rowsOf, type Relay } from '../src';
import { checkPublished, openLongTransaction, Writers } from './fixtures/cutover-writers';
import { openLogStore, type LogTestStore } from './fixtures/log-relay-support';

let store: LogTestStore;
const relays: Relay[] = [];

beforeAll(async () => {
  store = await openLogStore();
});
afterAll(async () => {
  await Promise.all(relays.map((relay) => relay.stop({ timeoutMs: 5_000 })));
  await store.dispose();
});

describe('taking over from polling relays by id (log.takeOverFromPolling)', () => {
  it('publishes every committed event exactly once, in order per key, across the cut-over', async () => {
    const publisher = createMemoryPublisher();
    const slot = `${store.schema}_cutover`;
    const writers = new Writers();
    writers.start(store, 4);
    const polling = createRelay({ store, publisher, pollIntervalMs: 20, batchSize: 25 });
    relays.push(polling);
    await polling.start();
    // Stopped early, so that the ids it leaves cross from two digits to three.
    await writers.commit(60);
    // The slot made beforehand (creating one waits for the transactions running then), so
    // that long transactions can draw their ids before the cut-over's boundary is read and
    // commit (or roll back) after it.
    await store.knex.raw(
      `create publication "${slot}" for table ${store.names.table('outbox')} with (publish = 'insert')`,
    );
    await store.knex.raw(`select pg_create_logical_replication_slot(?, 'pgoutput')`, [slot]);
    const long = await Promise.all(
      ['long-a', 'long-b', 'long-c'].map((tag) => openLongTransaction(store, tag)),
    );
    await polling.stop();
    await writers.commit(100);

    const log = createRelay({
      store,
      publisher,
      mode: 'log',
      batchSize: 25,
      log: { slot, statusIntervalMs: 500, takeOverFromPolling: true },
    });
    relays.push(log);
    await log.start();
    const [boundary] = rowsOf<{ boundary: string }>(
      await store.knex.raw(
        `select boundary::text as boundary from ${store.names.table('relay_cutover')} where slot = ?`,
        [slot],
      ),
    );
    expect(BigInt(boundary!.boundary)).toBeGreaterThan(0n);
    await writers.commit(50);
    await long[0]!.commit();
    await long[1]!.rollback();
    await long[2]!.commit();
    writers.committed.add('long-a').add('long-c');
    writers.rolledBack.add('long-b');
    await writers.commit(150);
    await writers.stop();
    await log.stop({ drain: true, timeoutMs: 30_000 });

    const published = checkPublished(publisher);
    expect([...writers.rolledBack].filter((tag) => published.has(tag))).toEqual([]);
    expect([...writers.committed].filter((tag) => !published.has(tag))).toEqual([]);
    expect(published.size).toBe(writers.committed.size);
    // The cut-over published what the polling relay left (kept as published rows).
    const [left] = rowsOf<{ n: number }>(
      await store.knex.raw(
        `select count(*)::int as n from ${store.names.table('outbox')} where status = 'published'`,
      ),
    );
    expect(left!.n).toBeGreaterThan(0);
  }, 60_000);

  it('refuses an outbox id sequence that caches values, when it starts', async () => {
    const [{ seq }] = rowsOf<{ seq: string }>(
      await store.knex.raw(`select pg_get_serial_sequence(?, 'id') as seq`, [
        store.names.table('outbox'),
      ]),
    ) as [{ seq: string }];
    await store.knex.raw(`alter sequence ${seq} cache 10`);
    try {
      const relay = createRelay({
        store,
        publisher: createMemoryPublisher(),
        mode: 'log',
        log: { slot: `${store.schema}_cached`, takeOverFromPolling: true },
      });
      const error = await relay.start().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toContain('cache 1');
      expect(relay.running).toBe(false);
    } finally {
      await store.knex.raw(`alter sequence ${seq} cache 1`);
    }
  });
});
