import type { Knex } from 'knex';
import {
  createMemoryPublisher,
  createOutbox,
  ConfigurationError,
  createRelay,
  rowsOf,
  type MemoryPublisher,
  type Relay,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
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

interface Payload {
  readonly tag: string;
  readonly seq: number;
}

/** What the writers did: each committed and rolled-back event's tag, and per key the order. */
class Writers {
  readonly committed = new Set<string>();
  readonly rolledBack = new Set<string>();
  private stopped = false;
  private readonly loops: Promise<void>[] = [];

  /** Starts `count` writers, each on keys of its own, committing one to three events at a time. */
  start(count: number): void {
    const outbox = createOutbox({ store });
    for (let w = 0; w < count; w += 1) {
      this.loops.push(
        (async () => {
          for (let seq = 0; !this.stopped; seq += 1) {
            const events = Array.from({ length: 1 + (seq % 3) }, (_, i) => ({
              destination: 'cutover',
              key: `w${w}-k${(seq + i) % 3}`,
              payload: { tag: `w${w}-${seq}-${i}`, seq: seq * 3 + i } satisfies Payload,
            }));
            const tags = events.map((e) => e.payload.tag);
            const rollBack = seq % 7 === 6;
            await store.knex
              .transaction(async (trx) => {
                await outbox.add(trx, events);
                if (rollBack) throw new Error('roll back');
              })
              .then(
                () => tags.forEach((tag) => this.committed.add(tag)),
                () => tags.forEach((tag) => this.rolledBack.add(tag)),
              );
          }
        })(),
      );
    }
  }

  /** Resolves once `more` further events have committed. */
  async commit(more: number): Promise<void> {
    const target = this.committed.size + more;
    await waitFor(`${more} more committed events`, () => this.committed.size >= target, {
      timeoutMs: 30_000,
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }
}

/** Opens a transaction that adds one event (drawing its id) and stays open. */
async function openLongTransaction(tag: string): Promise<Knex.Transaction> {
  const trx = await store.knex.transaction();
  await createOutbox({ store }).add(trx, {
    destination: 'cutover',
    key: `long-${tag}`,
    payload: { tag, seq: 0 } satisfies Payload,
  });
  return trx;
}

const payloadOf = (m: { payload: Uint8Array }): Payload =>
  JSON.parse(Buffer.from(m.payload).toString()) as Payload;

/** Every tag the publisher got, asserting no message went out twice and each key kept order. */
function checkPublished(publisher: MemoryPublisher): Set<string> {
  const ids = publisher.published.map((m) => m.messageId);
  expect(new Set(ids).size).toBe(ids.length);
  const lastSeq = new Map<string, number>();
  for (const m of publisher.published) {
    const { seq } = payloadOf(m);
    const key = m.key ?? '';
    expect(seq).toBeGreaterThan(lastSeq.get(key) ?? -1);
    lastSeq.set(key, seq);
  }
  return new Set(publisher.published.map((m) => payloadOf(m).tag));
}

describe('taking over from polling relays by id (log.takeOverFromPolling)', () => {
  it('publishes every committed event exactly once, in order per key, across the cut-over', async () => {
    const publisher = createMemoryPublisher();
    const slot = `${store.schema}_cutover`;
    const writers = new Writers();
    writers.start(4);
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
    const long = await Promise.all(['long-a', 'long-b', 'long-c'].map(openLongTransaction));
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
