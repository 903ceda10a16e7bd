import fc from 'fast-check';
import {
  createMemoryPublisher,
  createOutbox,
  createRelay,
  rowsOf,
  type MemoryPublisher,
  type Relay,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { confirmedLsn, openLogStore, type LogTestStore } from './fixtures/log-relay-support';

let store: LogTestStore;
const relays: Relay[] = [];

beforeAll(async () => {
  store = await openLogStore();
});
afterAll(async () => {
  await Promise.all(relays.map((relay) => relay.stop({ timeoutMs: 5_000 })));
  await store.dispose();
});

/** A log relay on the test store; stopped after the file. */
function logRelay(publisher: MemoryPublisher, slot: string, extra: object = {}): Relay {
  const relay = createRelay({
    store,
    publisher,
    mode: 'log',
    log: { slot: `${store.schema}_${slot}`, statusIntervalMs: 500, standbyRetryMs: 100 },
    backoff: { baseMs: 10, capMs: 50 },
    ...extra,
  });
  relays.push(relay);
  return relay;
}

const outboxTable = (): string => store.names.table('outbox');

describe("mode 'log' on a server with wal_level = logical", () => {
  it('publishes what committed, in commit order per key, and nothing that rolled back', async () => {
    const publisher = createMemoryPublisher();
    const relay = logRelay(publisher, 'order');
    // The slot exists from here on: what commits after it is in it.
    await relay.runOnce();
    const outbox = createOutbox({ store });
    // Two transactions on one key: the first inserted commits last.
    const first = await store.knex.transaction();
    await outbox.add(first, {
      destination: 'orders',
      key: 'k',
      payload: { step: 'inserted first' },
    });
    await store.knex.transaction((second) =>
      outbox.add(second, { destination: 'orders', key: 'k', payload: { step: 'committed first' } }),
    );
    await first.commit();
    await store.knex
      .transaction(async (trx) => {
        await outbox.add(trx, {
          destination: 'orders',
          key: 'k',
          payload: { step: 'rolled back' },
        });
        throw new Error('roll back');
      })
      .catch(() => undefined);
    await store.knex.transaction((trx) =>
      outbox.add(trx, [
        { destination: 'orders', key: 'k', payload: { step: 'last' } },
        { destination: 'audit', payload: { step: 'keyless' } },
      ]),
    );
    const result = await relay.runOnce();
    expect(result).toMatchObject({ published: 4, failed: 0, dead: 0 });
    const steps = publisher
      .byKey('k')
      .map((m) => (JSON.parse(Buffer.from(m.payload).toString()) as { step: string }).step);
    expect(steps).toEqual(['committed first', 'inserted first', 'last']);
    expect(publisher.byKey(null).map((m) => m.destination)).toEqual(['audit']);
    // Confirmed: a second pass finds nothing, and the rows were never updated.
    expect(await relay.runOnce()).toMatchObject({ published: 0 });
    const [row] = rowsOf<{ pending: number }>(
      await store.knex.raw(
        `select count(*) filter (where status = 'pending')::int as pending from ${outboxTable()}`,
      ),
    );
    expect(row!.pending).toBe(4);
  });

  it('carries any payload bytes, headers and key exactly as the polling relay would', async () => {
    const publisher = createMemoryPublisher();
    const relay = logRelay(publisher, 'bytes');
    await relay.runOnce();
    const outbox = createOutbox({ store });
    const text = fc
      .string({ unit: 'grapheme', maxLength: 20 })
      .filter((s) => !s.includes('\u0000'));
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 3_000 }),
        fc.option(
          text.filter((s) => s.length > 0),
          { nil: null },
        ),
        fc.dictionary(fc.stringMatching(/^x-[a-z]{1,8}$/), text, { maxKeys: 4 }),
        async (bytes, key, headers) => {
          publisher.clear();
          const payload = Buffer.from(bytes);
          await store.knex.transaction((trx) =>
            outbox.add(trx, { destination: 'bytes', key, headers, payload }),
          );
          await relay.runOnce();
          expect(publisher.published).toHaveLength(1);
          const [message] = publisher.published;
          expect(Buffer.from(message!.payload).equals(payload)).toBe(true);
          expect(message!.key).toBe(key);
          for (const [name, value] of Object.entries(headers)) {
            expect(message!.headers[name]).toBe(value);
          }
          expect(message!.messageId).toEqual(expect.any(String));
        },
      ),
      { numRuns: 25 },
    );
  });

  it('publishes while started, and reports its slot', async () => {
    const publisher = createMemoryPublisher();
    const relay = logRelay(publisher, 'started');
    await relay.start();
    const outbox = createOutbox({ store });
    for (let i = 0; i < 5; i += 1) {
      await store.knex.transaction((trx) =>
        outbox.add(
          trx,
          Array.from({ length: 50 }, (_, n) => ({
            destination: 'live',
            key: `k${n % 7}`,
            payload: { i, n },
          })),
        ),
      );
    }
    await publisher.waitForCount(250);
    await waitFor(
      'the relay to be caught up',
      async () => (await relay.stats()).log?.lagSeconds === 0,
    );
    const stats = await relay.stats();
    expect(stats.log).toMatchObject({ slot: `${store.schema}_started`, active: true });
    expect(stats.log!.confirmedLsn).toBe(await confirmedLsn(store.knex, `${store.schema}_started`));
    expect(stats.pending).toBe(0);
    await relay.stop();
    expect(relay.running).toBe(false);
  });
});
