import fc from 'fast-check';
import {
  ConfigurationError,
  createMemoryPublisher,
  createRelay,
  isJustonceError,
  rowsOf,
  type Relay,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { checkPublished, openLongTransaction, Writers } from './fixtures/cutover-writers';
import { openLogStore, type LogTestStore } from './fixtures/log-relay-support';

let store: LogTestStore;
const relays: Relay[] = [];

beforeAll(async () => {
  store = await openLogStore();
});
afterAll(async () => {
  await Promise.all(relays.map((relay) => relay.stop({ timeoutMs: 5_000 }).catch(() => undefined)));
  await store.dispose();
});

const handBackOf = async (slot: string): Promise<{ boundary: string; done: boolean } | undefined> =>
  rowsOf<{ boundary: string; done: boolean }>(
    await store.knex
      .raw(
        `select boundary::text as boundary, done from ${store.names.table('relay_handback')} where slot = ?`,
        [slot],
      )
      .catch(() => ({ rows: [] })),
  )[0];

const slotExists = async (slot: string): Promise<boolean> =>
  rowsOf(await store.knex.raw(`select 1 from pg_replication_slots where slot_name = ?`, [slot]))
    .length > 0;

describe('handing the outbox back to polling relays (stop({ handBackToPolling }))', () => {
  it('publishes every committed event exactly once, in order per key, without pausing the writers', async () => {
    const publisher = createMemoryPublisher();
    const slot = `${store.schema}_handback`;
    const writers = new Writers();
    const log = createRelay({
      store,
      publisher,
      mode: 'log',
      batchSize: 25,
      log: { slot, statusIntervalMs: 500 },
    });
    relays.push(log);
    await log.start();
    await waitFor('the log relay to read the slot', async () => (await log.stats()).log?.active);
    // A standby on the same slot: it must not read the slot once it is handed back.
    const standby = createRelay({
      store,
      publisher,
      mode: 'log',
      batchSize: 25,
      log: { slot, standbyRetryMs: 100 },
    });
    relays.push(standby);
    await standby.start();
    writers.start(store, 4);
    await writers.commit(100);
    // Transactions that draw their ids before the boundary is read and end after it.
    const long = await Promise.all(
      ['long-a', 'long-b', 'long-c'].map((tag) => openLongTransaction(store, tag)),
    );
    const handedBack = log.stop({ handBackToPolling: true, timeoutMs: 30_000 });
    await waitFor(
      'the boundary to be recorded',
      async () => (await handBackOf(slot)) !== undefined,
    );
    await writers.commit(50);
    expect((await handBackOf(slot))?.done).toBe(false);
    await long[0]!.commit();
    await long[1]!.rollback();
    await long[2]!.commit();
    writers.committed.add('long-a').add('long-c');
    writers.rolledBack.add('long-b');
    await handedBack;
    const byLog = publisher.published.length;
    expect((await handBackOf(slot))?.done).toBe(true);
    expect(await slotExists(slot)).toBe(false);

    const polling = createRelay({ store, publisher, pollIntervalMs: 20, batchSize: 25 });
    relays.push(polling);
    await polling.start();
    await writers.commit(100);
    await writers.stop();
    await polling.stop({ drain: true, timeoutMs: 30_000 });
    expect((await standby.stats()).log?.active).toBe(false);

    const published = checkPublished(publisher);
    expect([...writers.rolledBack].filter((tag) => published.has(tag))).toEqual([]);
    expect([...writers.committed].filter((tag) => !published.has(tag))).toEqual([]);
    expect(published.size).toBe(writers.committed.size);
    // Both sides published: the log relay up to the boundary, the polling relays above it.
    expect(byLog).toBeGreaterThan(100);
    expect(publisher.published.length).toBeGreaterThan(byLog);

    // The slot is never read again: a log relay on it refuses to start.
    const again = createRelay({ store, publisher, mode: 'log', log: { slot } });
    const error = await again.start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toContain('handed back');
    expect(await slotExists(slot)).toBe(false);
  }, 60_000);

  it('refuses a handBackToPolling that is not a boolean, before anything else', async () => {
    const log = createRelay({
      store,
      publisher: createMemoryPublisher(),
      mode: 'log',
      log: { slot: `${store.schema}_input` },
    });
    await fc.assert(
      fc.asyncProperty(
        fc.anything().filter((v) => v !== undefined && typeof v !== 'boolean'),
        async (value) => {
          const error = await log
            .stop({ handBackToPolling: value as boolean })
            .catch((e: unknown) => e);
          expect(error).toBeInstanceOf(ConfigurationError);
          expect((error as Error).message).toContain('handBackToPolling');
        },
      ),
      { numRuns: 50 },
    );
  });

  it('rejects when the relay is not running, and in the polling mode', async () => {
    const log = createRelay({
      store,
      publisher: createMemoryPublisher(),
      mode: 'log',
      log: { slot: `${store.schema}_idle` },
    });
    const error = await log.stop({ handBackToPolling: true }).catch((e: unknown) => e);
    expect(isJustonceError(error) && error.code).toBe('HAND_BACK_INCOMPLETE');
    const polling = createRelay({ store, publisher: createMemoryPublisher() });
    await expect(polling.stop({ handBackToPolling: true })).rejects.toBeInstanceOf(
      ConfigurationError,
    );
  });
});
