import type { Meter } from '@opentelemetry/api';
import {
  createMemoryPublisher,
  createOutbox,
  createRelay,
  createStore,
  rowsOf,
  type OutboxEvent,
  type Publisher,
  type Relay,
  type Store,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
import {
  ALL_STORE_KINDS,
  databaseUrl,
  mysqlUrl,
  openTestStore,
  PER_KEY_CLAIM,
  uniqueSchema,
  type StoreKind,
} from './db';
import { watchStatements } from './fixtures/statements';
import { runUntilIdle } from './fixtures/run-until-idle';

/** How long the checks below wait for the relay, and how often they look. */
const SOON = { timeoutMs: 10_000, intervalMs: 10 };

async function statusCounts(store: Store): Promise<Record<string, number>> {
  const result = await store.knex.raw(
    `select status, count(*) as n from ${store.names.table('outbox')} group by status`,
  );
  return Object.fromEntries(
    rowsOf<{ status: string; n: unknown }>(result).map((r) => [r.status, Number(r.n)]),
  );
}

function payloadsOf(messages: readonly { payload: Uint8Array }[]): unknown[] {
  return messages.map((m) => JSON.parse(Buffer.from(m.payload).toString()) as unknown);
}

/**
 * Each store with the batch claim, and PostgreSQL's distributable schema with the per-key
 * claim: the label, the store's kind, its options and the relay's.
 */
const CLAIM_VARIANTS: ReadonlyArray<
  readonly [string, StoreKind, typeof PER_KEY_CLAIM.store | object, { claim?: 'per-key' }]
> = [
  ...ALL_STORE_KINDS.map((kind) => [kind, kind, {}, {}] as const),
  ['postgres, per-key claim', 'postgres', PER_KEY_CLAIM.store, PER_KEY_CLAIM.relay],
];

describe.each(CLAIM_VARIANTS)('relay on %s', (_label, kind, storeOptions, claim) => {
  let store: Store & { dispose(): Promise<void> };
  const relays: Relay[] = [];
  // Published rows are kept, so the tests can read what the relay marked.
  const make = (options: Omit<Parameters<typeof createRelay>[0], 'store'>): Relay => {
    const relay = createRelay({ store, ...claim, onPublished: 'keep', ...options });
    relays.push(relay);
    return relay;
  };
  const add = (events: OutboxEvent | OutboxEvent[]): Promise<string[]> =>
    store.knex.transaction((trx) => createOutbox({ store }).add(trx, events));
  /** The database's time `seconds` ago, in the dialect's SQL. */
  const ago = (seconds: number): string =>
    kind === 'mysql'
      ? `current_timestamp(6) - interval ${seconds} second`
      : `now() - interval '${seconds} seconds'`;

  beforeAll(async () => {
    store = await openTestStore(kind, storeOptions);
  });
  afterAll(async () => {
    await store.dispose();
  });
  beforeEach(async () => {
    await store.knex.raw(`delete from ${store.names.table('outbox')}`);
  });
  afterEach(async () => {
    // A test that leaves a relay running fails here rather than leaking it into the next one.
    const leaked = relays.filter((r) => r.running);
    await Promise.all(relays.splice(0).map((r) => r.stop({ timeoutMs: 2_000 })));
    expect(leaked).toHaveLength(0);
  });

  // MySQL has no LISTEN/NOTIFY: its relay polls (below).
  if (kind !== 'mysql') {
    it('wakes on the commit notification and publishes exactly once', async () => {
      const publisher = createMemoryPublisher();
      const relay = make({ publisher, pollIntervalMs: 60_000 });
      await relay.start();
      expect((await relay.stats()).listening).toBe(true);
      const started = Date.now();
      const [id] = await add({ destination: 'orders', key: 'a', payload: { n: 1 } });
      await publisher.waitForCount(1, 5_000);
      // With a one-minute poll, only the notification can explain a prompt publish.
      expect(Date.now() - started).toBeLessThan(5_000);
      await waitFor(
        'the event to be marked published',
        async () => (await statusCounts(store)).published === 1,
        SOON,
      );
      await relay.stop();
      expect(publisher.published.map((m) => m.messageId)).toEqual([id]);
      expect(publisher.published[0]!.headers['message-id']).toBe(id);
    });
  }

  // MySQL and MariaDB: no listening connection; a committed event is found by the next poll.
  if (kind === 'mysql') {
    it('polls without listening and publishes exactly once', async () => {
      const publisher = createMemoryPublisher();
      const relay = make({ publisher, pollIntervalMs: 20 });
      await relay.start();
      expect((await relay.stats()).listening).toBe(false);
      const [id] = await add({ destination: 'orders', key: 'a', payload: { n: 1 } });
      await publisher.waitForCount(1, 5_000);
      await waitFor(
        'the event to be marked published',
        async () => (await statusCounts(store)).published === 1,
        SOON,
      );
      await relay.stop();
      expect(publisher.published.map((m) => m.messageId)).toEqual([id]);
    });
  }

  it('deletes published events by default; keeps them marked with onPublished keep', async () => {
    const publisher = createMemoryPublisher();
    await add([
      { destination: 'd', key: 'a', payload: 1 },
      { destination: 'd', key: 'b', payload: 2 },
    ]);
    expect(await createRelay({ store, ...claim, publisher }).runOnce()).toMatchObject({
      published: 2,
    });
    expect(await statusCounts(store)).toEqual({});
    await add({ destination: 'd', key: 'a', payload: 3 });
    const keeping = createRelay({ store, ...claim, publisher, onPublished: 'keep' });
    expect(await keeping.runOnce()).toMatchObject({ published: 1 });
    expect(await statusCounts(store)).toEqual({ published: 1 });
    expect(payloadsOf(publisher.published)).toEqual([1, 2, 3]);
  });

  it.each([
    ['one batch', 100],
    ['held claims read ahead', 4],
  ])(
    'publishes every payload size and byte, and odd keys and headers, intact and in key order (%s)',
    async (_label, batchSize) => {
      // Small payloads travel packed with the claimed rows, larger ones are read apart: sizes
      // on both sides of that line, every byte value, keys and headers that need escaping.
      const sizes = [0, 1, 511, 512, 513, 4_096, 70_000];
      const keys = ['plain', 'ключ "2" \\ 🎉', null];
      const events: OutboxEvent[] = [];
      for (const size of sizes) {
        for (const key of keys) {
          const payload = new Uint8Array(size);
          for (let i = 0; i < size; i += 1) payload[i] = (i * 7 + events.length) % 256;
          events.push({
            destination: 'odd "dest" \u0001',
            key,
            payload,
            headers: { 'x-note': `quote " slash \\ tab \t ${'é'.repeat(events.length)}` },
            messageId: `m-${events.length}-\u00e9`,
          });
        }
      }
      await add(events);
      const publisher = createMemoryPublisher();
      await runUntilIdle(make({ publisher, batchSize }));
      expect(publisher.published).toHaveLength(events.length);
      const sent = new Map(publisher.published.map((m) => [m.messageId, m]));
      for (const event of events) {
        const message = sent.get(event.messageId!)!;
        expect(message.destination).toBe(event.destination);
        expect(message.key).toBe(event.key);
        expect(message.headers['x-note']).toBe(event.headers!['x-note']);
        expect(Buffer.from(message.payload).equals(event.payload as Uint8Array)).toBe(true);
      }
      for (const key of keys) {
        expect(publisher.byKey(key).map((m) => m.messageId)).toEqual(
          events.filter((e) => e.key === key).map((e) => e.messageId),
        );
      }
    },
  );

  it('keeps other keys flowing while one fails, then resumes that key in order', async () => {
    const publisher = createMemoryPublisher();
    const relay = make({ publisher, backoff: { baseMs: 1, capMs: 5 }, batchSize: 7 });
    const events: OutboxEvent[] = [];
    for (let i = 0; i < 5; i += 1) {
      for (const key of ['good-1', 'bad', 'good-2'])
        events.push({ destination: 'd', key, payload: { key, i } });
    }
    await add(events);
    const heal = publisher.failKey('bad');
    await waitFor(
      'both healthy keys to be published',
      async () => {
        await relay.runOnce();
        return publisher.byKey('good-1').length === 5 && publisher.byKey('good-2').length === 5;
      },
      SOON,
    );
    expect(publisher.byKey('bad')).toHaveLength(0);
    const held = rowsOf<{ attempts: number; last_error: string }>(
      await store.knex.raw(
        `select attempts, last_error from ${store.names.table('outbox')}
         where partition_key = 'bad' order by id`,
      ),
    );
    // Only the head of the failing key was attempted; the rest waited untouched.
    expect(held[0]!.attempts).toBeGreaterThanOrEqual(1);
    expect(held[0]!.last_error).toContain('injected failure for key bad');
    expect(held.slice(1).every((r) => r.attempts === 0)).toBe(true);

    heal();
    await waitFor(
      'the healed key to be published',
      async () => {
        await relay.runOnce();
        return publisher.byKey('bad').length === 5;
      },
      SOON,
    );
    expect(payloadsOf(publisher.byKey('bad'))).toEqual(
      [0, 1, 2, 3, 4].map((i) => ({ key: 'bad', i })),
    );
    for (const key of ['good-1', 'good-2']) {
      expect(payloadsOf(publisher.byKey(key))).toEqual([0, 1, 2, 3, 4].map((i) => ({ key, i })));
    }
    expect(await statusCounts(store)).toEqual({ published: 15 });
  });

  it('gives up after maxAttempts, lists the dead event and requeues it', async () => {
    const publisher = createMemoryPublisher();
    const relay = make({ publisher, maxAttempts: 3, backoff: { baseMs: 1, capMs: 2 } });
    const [poison] = await add({ destination: 'd', key: 'p', payload: { n: 1 } });
    const heal = publisher.failKey('p', { message: 'broker says no' });
    await waitFor(
      'the poison event to be dead',
      async () => {
        await relay.runOnce();
        return (await relay.listDead()).length === 1;
      },
      SOON,
    );
    const [dead] = await relay.listDead();
    expect(dead).toMatchObject({ messageId: poison, key: 'p', attempts: 3, destination: 'd' });
    expect(dead!.lastError).toContain('broker says no');
    expect((await relay.stats()).dead).toBe(1);

    // A dead head no longer holds its key back.
    const [after] = await add({ destination: 'd', key: 'p', payload: { n: 2 } });
    heal();
    await runUntilIdle(relay);
    expect(publisher.byKey('p').map((m) => m.messageId)).toEqual([after]);

    expect(await relay.requeue('999999999')).toBeNull();
    const newId = await relay.requeue(dead!.id);
    expect(newId).not.toBeNull();
    expect(await relay.requeue(dead!.id)).toBeNull();
    await runUntilIdle(relay);
    expect(publisher.byKey('p').map((m) => m.messageId)).toEqual([after, poison]);
    expect(await relay.listDead()).toHaveLength(0);
    expect(await statusCounts(store)).toEqual({ published: 2 });
  });

  it('finds keys beyond a window filled by one backing-off key', async () => {
    const publisher = createMemoryPublisher();
    const relay = make({ publisher, backoff: { baseMs: 60_000, capMs: 60_000 } });
    // More events of one key than the claim's window holds (1 000 rows), then three others.
    await add(
      Array.from({ length: 1_100 }, (_, i) => ({ destination: 'd', key: 'stuck', payload: i })),
    );
    await add(['a', 'b', 'c'].map((key) => ({ destination: 'd', key, payload: key })));
    const heal = publisher.failKey('stuck');
    expect(await relay.runOnce()).toMatchObject({ failed: 1, published: 0 });
    heal();
    // The window holds only stuck's events, and its head backs off for a minute: the other
    // keys are found by walking the keys instead.
    expect(await relay.runOnce()).toMatchObject({ claimed: 3, published: 3 });
    expect(publisher.published.map((m) => m.key).sort()).toEqual(['a', 'b', 'c']);
    expect(await relay.runOnce()).toMatchObject({ claimed: 0 });
  });

  it('sends a non-retriable failure straight to dead', async () => {
    const publisher = createMemoryPublisher();
    const relay = make({ publisher, maxAttempts: 10 });
    await add({ destination: 'd', key: 'x', payload: 1 });
    publisher.failKey('x', { retriable: false });
    expect(await relay.runOnce()).toMatchObject({ claimed: 1, failed: 1, dead: 1 });
    expect(await relay.listDead()).toHaveLength(1);
    expect((await relay.stats()).markedDead).toBe(1);
  });

  it('backs off with jitter when the whole publish call fails, then recovers', async () => {
    const publisher = createMemoryPublisher();
    const relay = make({ publisher, backoff: { baseMs: 20, capMs: 40 } });
    await add([
      { destination: 'd', key: 'a', payload: 1 },
      { destination: 'd', key: 'a', payload: 2 },
      { destination: 'd', key: 'b', payload: 3 },
      { destination: 'd', payload: 4 },
    ]);
    publisher.rejectNextCalls(1);
    // Heads of a and b and the keyless event are attempted; a's second event waits.
    expect(await relay.runOnce()).toMatchObject({ claimed: 4, failed: 3, released: 1, dead: 0 });
    // Backed off, but not charged: a failed call is the broker's outage, not the events'.
    const due = rowsOf<{ later: boolean; attempts: number }>(
      await store.knex.raw(
        `select available_at > now() as later, attempts from ${store.names.table('outbox')}
          where last_error is not null`,
      ),
    );
    expect(due).toHaveLength(3);
    expect(due.map((r) => Number(r.attempts))).toEqual([0, 0, 0]);
    await waitFor(
      'all four events to be published',
      async () => {
        await relay.runOnce();
        return publisher.published.length === 4;
      },
      SOON,
    );
    expect(payloadsOf(publisher.byKey('a'))).toEqual([1, 2]);
    expect((await relay.stats()).failed).toBe(3);
  });

  it('stops gracefully: finishes the batch in flight and marks it', async () => {
    const publisher = createMemoryPublisher({ delayMs: 300 });
    const relay = make({ publisher, batchSize: 50, concurrency: 1 });
    await add(
      Array.from({ length: 120 }, (_, i) => ({ destination: 'd', key: `k${i % 10}`, payload: i })),
    );
    await relay.start();
    await waitFor('the first publish call', () => publisher.calls >= 1, SOON);
    await relay.stop();
    const counts = await statusCounts(store);
    expect(counts.published).toBe(publisher.published.length);
    expect(counts.published).toBeGreaterThanOrEqual(50);
    // Nothing is still held: every pending row can be locked by someone else.
    await store.knex.transaction(async (trx) => {
      const t = store.names.table('outbox');
      const free = rowsOf<{ id: unknown }>(
        await trx.raw(`select id from ${t} where status = 'pending' for update skip locked`),
      );
      expect(free).toHaveLength(120 - counts.published!);
    });
  });

  it('stop with drain publishes everything claimable first', async () => {
    const publisher = createMemoryPublisher({ delayMs: 20 });
    const relay = make({ publisher, batchSize: 10, pollIntervalMs: 60_000, notify: false });
    await add(
      Array.from({ length: 95 }, (_, i) => ({ destination: 'd', key: `k${i % 3}`, payload: i })),
    );
    await relay.start();
    await relay.stop({ drain: true });
    expect(await statusCounts(store)).toEqual({ published: 95 });
  });

  it('rolls its claim back when stop times out on a publisher that hangs', async () => {
    let calls = 0;
    const hanging: Publisher = {
      publish: () => {
        calls += 1;
        return new Promise(() => undefined);
      },
      close: async () => undefined,
    };
    const relay = make({
      publisher: hanging,
      concurrency: 1,
      leaseMs: 60_000,
      publishTimeoutMs: 50_000,
    });
    await add({ destination: 'd', key: 'h', payload: 1 });
    await relay.start();
    await waitFor('the publish to start', () => calls === 1, SOON);
    await relay.stop({ timeoutMs: 100 });
    const rows = rowsOf<{ attempts: number; status: string }>(
      await store.knex.raw(`select attempts, status from ${store.names.table('outbox')}`),
    );
    expect(rows).toEqual([{ attempts: 0, status: 'pending' }]);
    // Claimable again at once.
    const publisher = createMemoryPublisher();
    expect(await make({ publisher }).runOnce()).toMatchObject({ claimed: 1, published: 1 });
  });

  it('reports stats and OpenTelemetry metrics', async () => {
    const meter = recordingMeter();
    const publisher = createMemoryPublisher();
    const relay = make({ publisher, meter: meter.meter, maxAttempts: 1, notify: false });
    await add([
      { destination: 'd', key: 'a', payload: 1 },
      { destination: 'd', key: 'b', payload: 2 },
      { destination: 'd', key: 'c', payload: 3 },
    ]);
    await store.knex.raw(`update ${store.names.table('outbox')} set created_at = ${ago(5)}`);
    const before = await relay.stats();
    expect(before).toMatchObject({ pending: 3, published: 0, dead: 0 });
    expect(before.oldestPendingAgeMs).toBeGreaterThanOrEqual(4_900);
    publisher.failKey('c', { retriable: false });
    await relay.start();
    expect(await meter.collect()).toMatchObject({
      'justonce.outbox.pending': expect.any(Number),
    });
    await publisher.waitForCount(2, 5_000);
    await waitFor(
      'the dead event in the stats',
      async () => (await relay.stats()).dead === 1,
      SOON,
    );
    const after = await relay.stats();
    expect(after).toMatchObject({ pending: 0, oldestPendingAgeMs: 0, published: 2, failed: 1 });
    expect(after.publishedPerSec).toBeGreaterThan(0);
    expect(meter.counters).toMatchObject({
      'justonce.relay.published': 2,
      'justonce.relay.failed': 1,
      'justonce.relay.dead': 1,
    });
    expect(await meter.collect()).toMatchObject({
      'justonce.outbox.pending': 0,
      'justonce.outbox.oldest_pending_age': 0,
    });
    await relay.stop();
    expect(meter.callbacks).toBe(0);
  });

  it('cleans up published events in bounded batches', async () => {
    const publisher = createMemoryPublisher();
    const relay = make({ publisher, batchSize: 500 });
    await add(
      Array.from({ length: 250 }, (_, i) => ({ destination: 'd', key: `k${i % 5}`, payload: i })),
    );
    await add({ destination: 'd', key: 'late', payload: 'unpublished' });
    await store.knex.raw(
      `update ${store.names.table('outbox')} set status = 'pending' where partition_key = 'late'`,
    );
    await runUntilIdle(relay);
    await store.knex.raw(
      `update ${store.names.table('outbox')} set published_at = ${ago(7200)}
       where status = 'published' and partition_key <> 'late'`,
    );
    expect(await relay.cleanup({ olderThanMs: 3_600_000, batchSize: 100, maxBatches: 1 })).toBe(
      100,
    );
    expect(await relay.cleanup({ olderThanMs: 3_600_000, batchSize: 100 })).toBe(150);
    // The one published a moment ago is younger than the limit and stays.
    expect(await statusCounts(store)).toEqual({ published: 1 });
    expect(await relay.cleanup({ olderThanMs: 0, batchSize: 100 })).toBe(1);
  });

  it('pipelines cycles past maxConcurrentPublishes, never more calls in flight, order kept', async () => {
    const inner = createMemoryPublisher({ delayMs: 5 });
    let inFlight = 0;
    let maxInFlight = 0;
    const publisher: Publisher = {
      async publish(messages) {
        inFlight += 1;
        maxInFlight = Math.max(maxInFlight, inFlight);
        try {
          return await inner.publish(messages);
        } finally {
          inFlight -= 1;
        }
      },
      close: () => inner.close(),
    };
    const keys = Array.from({ length: 40 }, (_, k) => `k${k}`);
    await add(
      keys.flatMap((key) =>
        [0, 1, 2, 3, 4].map((n) => ({ destination: 'd', key, payload: { n } })),
      ),
    );
    const relay = make({ publisher, batchSize: 10, concurrency: 4, maxConcurrentPublishes: 2 });
    await relay.start();
    await inner.waitForCount(200, 20_000);
    await relay.stop();
    expect(maxInFlight).toBeLessThanOrEqual(2);
    // On PostgreSQL four cycles run; on PGlite one (a single connection).
    expect(maxInFlight).toBeGreaterThanOrEqual(kind === 'pglite' ? 1 : 2);
    for (const key of keys) {
      expect(payloadsOf(inner.byKey(key))).toEqual([0, 1, 2, 3, 4].map((n) => ({ n })));
    }
  });

  it('refuses invalid options at construction', () => {
    const publisher = createMemoryPublisher();
    const bad = [
      { batchSize: 0 },
      { concurrency: 1.5 },
      { maxAttempts: -1 },
      { leaseMs: 1_000, publishTimeoutMs: 1_000 },
      { backoff: { baseMs: 100, capMs: 10 } },
      { ownerId: '' },
      { onPublished: 'archive' as 'keep' },
      { notify: 'yes' as unknown as boolean },
      { concurrency: 2, maxConcurrentPublishes: 3 },
      { concurrency: 4, maxConcurrentPublishes: 1, leaseMs: 4_000, publishTimeoutMs: 1_000 },
      { claimHoldMs: -1 },
      { claimHoldMs: 0.5 },
      { leaseMs: 1_000, publishTimeoutMs: 100, claimHoldMs: 501 },
    ];
    for (const options of bad) {
      expect(() => createRelay({ store, ...claim, publisher, ...options })).toThrow(
        expect.objectContaining({ code: 'INVALID_CONFIG' }),
      );
    }
    expect(() => createRelay({ store, ...claim, publisher: {} as Publisher })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
  });
});

/** PostgreSQL and MariaDB with the batch claim, and PostgreSQL with the per-key claim. */
const TWO_CLAIMS = [
  ['postgres', 'postgres', {}, {}],
  ['mysql', 'mysql', {}, {}],
  ['postgres, per-key claim', 'postgres', PER_KEY_CLAIM.store, PER_KEY_CLAIM.relay],
] as const;

describe.each(TWO_CLAIMS)('two relays on %s', (_label, kind, storeOptions, claim) => {
  let store: Store & { dispose(): Promise<void> };
  beforeAll(async () => {
    store = await openTestStore(kind, storeOptions);
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('skips a key another relay holds, and takes it up after that relay commits', async () => {
    let finish: (() => void) | undefined;
    const slow = createMemoryPublisher();
    const gate: Publisher = {
      publish: async (messages) => {
        await new Promise<void>((resolve) => {
          finish = resolve;
        });
        return slow.publish(messages);
      },
      close: async () => undefined,
    };
    await store.knex.transaction((trx) =>
      createOutbox({ store }).add(trx, [
        { destination: 'd', key: 'held', payload: 1 },
        { destination: 'd', key: 'free', payload: 2 },
        { destination: 'd', key: 'held', payload: 3 },
        { destination: 'd', key: 'free', payload: 4 },
      ]),
    );
    // One batch per claim: the first relay holds the head of `held` through one publish.
    const first = createRelay({
      store,
      ...claim,
      onPublished: 'keep',
      publisher: gate,
      batchSize: 1,
      claimHoldMs: 0,
    });
    const inFlight = first.runOnce();
    await waitFor('the first relay to hold its batch', () => finish !== undefined, SOON);
    const publisher = createMemoryPublisher();
    const second = createRelay({ store, ...claim, onPublished: 'keep', publisher });
    // The held key's head is locked by the first relay: only the free key moves.
    expect(await second.runOnce()).toMatchObject({ claimed: 2, published: 2 });
    expect(payloadsOf(publisher.published)).toEqual([2, 4]);
    finish!();
    expect(await inFlight).toMatchObject({ claimed: 1, published: 1 });
    expect(payloadsOf(slow.published)).toEqual([1]);
    expect(await second.runOnce()).toMatchObject({ claimed: 1, published: 1 });
    expect(payloadsOf(publisher.byKey('held'))).toEqual([3]);
  });

  // MySQL has no per-transaction lease: MariaDB's idle_transaction_timeout (the store's
  // idleInTransactionMs) is what ends a stuck relay's claim there.
  if (kind === 'mysql') {
    it("ends a stuck relay's claim at the store's idleInTransactionMs on MariaDB", async () => {
      await store.knex.raw(`delete from ${store.names.table('outbox')}`);
      await store.knex.transaction((trx) =>
        createOutbox({ store }).add(trx, [
          { destination: 'd', key: 'stuck', payload: 1 },
          { destination: 'd', key: 'stuck', payload: 2 },
        ]),
      );
      const stuckStore = await createStore({
        connectionString: mysqlUrl(),
        schema: store.schema,
        timeouts: { idleInTransactionMs: 1_000 },
      });
      let release: (() => void) | undefined;
      const stuck = createRelay({
        store: stuckStore,
        onPublished: 'keep',
        claimHoldMs: 0,
        publisher: {
          publish: async (messages) => {
            await new Promise<void>((resolve) => (release = resolve));
            return messages.map((m) => ({ messageId: m.messageId, ok: true as const }));
          },
          close: async () => undefined,
        },
      });
      try {
        const inFlight = stuck.runOnce().catch((error: unknown) => error);
        await waitFor('the stuck relay to hold its batch', () => release !== undefined, SOON);
        // The server ends the idle transaction, and with it the claim: another relay takes over.
        const publisher = createMemoryPublisher();
        const other = createRelay({ store, ...claim, onPublished: 'keep', publisher });
        await waitFor(
          'the other relay to publish the stuck key',
          async () => {
            await other.runOnce();
            return publisher.byKey('stuck').length === 2;
          },
          SOON,
        );
        expect(payloadsOf(publisher.byKey('stuck'))).toEqual([1, 2]);
        release!();
        // The stuck relay's marks find its connection gone: its cycle fails, nothing is lost.
        expect(await inFlight).toBeInstanceOf(Error);
        expect(await statusCounts(store)).toEqual({ published: 2 });
      } finally {
        release?.();
        await stuckStore.close();
      }
    });
  }
});

/** A minimal OpenTelemetry meter that records what the relay reports. */
function recordingMeter(): {
  meter: Meter;
  counters: Record<string, number>;
  readonly callbacks: number;
  collect(): Promise<Record<string, number>>;
} {
  const counters: Record<string, number> = {};
  const callbacks = new Set<(r: { observe(i: { name: string }, v: number): void }) => unknown>();
  const meter = {
    createCounter: (name: string) => ({
      add: (value: number) => {
        counters[name] = (counters[name] ?? 0) + value;
      },
    }),
    createObservableGauge: (name: string) => ({ name }),
    addBatchObservableCallback: (cb: never) => callbacks.add(cb),
    removeBatchObservableCallback: (cb: never) => callbacks.delete(cb),
  };
  return {
    meter: meter as unknown as Meter,
    counters,
    get callbacks() {
      return callbacks.size;
    },
    async collect() {
      const seen: Record<string, number> = {};
      for (const cb of callbacks) {
        await cb({ observe: (instrument, value) => (seen[instrument.name] = value) });
      }
      return seen;
    },
  };
}

describe.each(TWO_CLAIMS)('claim hold on %s', (_label, kind, storeOptions, claim) => {
  let store: Store & { dispose(): Promise<void> };
  const schema = uniqueSchema('hold');
  const add = (events: OutboxEvent[]): Promise<string[]> =>
    store.knex.transaction((trx) => createOutbox({ store }).add(trx, events));
  const eventsOf = (keys: readonly string[], per: number): OutboxEvent[] =>
    Array.from({ length: per }, (_, i) =>
      keys.map((key) => ({ destination: 'd', key, payload: { key, i } })),
    ).flat();

  beforeAll(async () => {
    store = await openTestStore(kind, { ...storeOptions, schema });
  });
  afterAll(async () => {
    await store.dispose();
  });
  beforeEach(async () => {
    await store.knex.raw(`delete from ${store.names.table('outbox')}`);
  });

  it('keeps its keys and publishes their next events batch after batch, in order', async () => {
    await add(eventsOf(['a', 'b', 'c', 'd'], 6));
    const inner = createMemoryPublisher();
    let calls = 0;
    let maxInFlight = 0;
    const keysInFlight = new Set<string>();
    let keyInTwoCalls = false;
    let release: (() => void) | undefined;
    const publisher: Publisher = {
      async publish(messages) {
        calls += 1;
        const keys = new Set(messages.map((m) => m.key!));
        for (const key of keys) {
          keyInTwoCalls ||= keysInFlight.has(key);
          keysInFlight.add(key);
        }
        maxInFlight = Math.max(maxInFlight, keysInFlight.size);
        // The third call waits until the test lets it go.
        if (calls === 3) await new Promise<void>((resolve) => (release = resolve));
        try {
          return await inner.publish(messages);
        } finally {
          for (const key of keys) keysInFlight.delete(key);
        }
      },
      close: async () => undefined,
    };
    // Four publish slots: the claim takes a key for each of its four lanes.
    const holder = createRelay({
      store,
      ...claim,
      onPublished: 'keep',
      publisher,
      batchSize: 4,
      concurrency: 4,
      claimHoldMs: 10_000,
    });
    const running = holder.runOnce();
    await waitFor("the holder's batches to go out", () => release !== undefined, SOON);
    // Batches are out but not committed: the keys are still held, so another relay finds
    // nothing it may take, and sees every event still pending.
    const other = createMemoryPublisher();
    expect(
      await createRelay({ store, ...claim, onPublished: 'keep', publisher: other }).runOnce(),
    ).toMatchObject({
      claimed: 0,
    });
    expect(await statusCounts(store)).toEqual({ pending: 24 });
    release!();
    expect(await running).toEqual({ claimed: 24, published: 24, failed: 0, dead: 0, released: 0 });
    // Four lanes, a key each: calls overlap, a key never is in two calls at once, and each key
    // arrives in order.
    expect(calls).toBeGreaterThanOrEqual(6);
    expect(maxInFlight).toBe(4);
    expect(keyInTwoCalls).toBe(false);
    for (const key of ['a', 'b', 'c', 'd']) {
      expect(payloadsOf(inner.byKey(key))).toEqual([0, 1, 2, 3, 4, 5].map((i) => ({ key, i })));
    }
    expect(await statusCounts(store)).toEqual({ published: 24 });
    expect(other.published).toHaveLength(0);
  });

  it('publishes a held claim in one lane with maxConcurrentPublishes 1', async () => {
    await add(eventsOf(['a', 'b', 'c'], 4));
    const sizes: number[] = [];
    let inFlight = 0;
    let overlapped = false;
    const inner = createMemoryPublisher();
    const publisher: Publisher = {
      async publish(messages) {
        inFlight += 1;
        overlapped ||= inFlight > 1;
        sizes.push(messages.length);
        try {
          return await inner.publish(messages);
        } finally {
          inFlight -= 1;
        }
      },
      close: async () => undefined,
    };
    const relay = createRelay({
      store,
      ...claim,
      onPublished: 'keep',
      publisher,
      batchSize: 6,
      concurrency: 1,
      maxConcurrentPublishes: 1,
      claimHoldMs: 10_000,
    });
    // The window holds four events of each key: a batch of six needs two keys, a and b.
    expect(await relay.runOnce()).toMatchObject({ claimed: 8, published: 8 });
    expect(sizes).toEqual([6, 2]);
    expect(overlapped).toBe(false);
  });

  it('drops a key that fails from the rest of the hold; the other keys go on', async () => {
    await add(eventsOf(['good', 'bad'], 6));
    const inner = createMemoryPublisher();
    const publisher: Publisher = {
      async publish(messages) {
        const results = [];
        for (const m of messages) {
          const { key, i } = payloadsOf([m])[0] as { key: string; i: number };
          if (key === 'bad' && i === 2) {
            results.push({
              messageId: m.messageId,
              ok: false,
              error: new Error('no'),
              retriable: true,
            });
          } else {
            results.push(...(await inner.publish([m])));
          }
        }
        return results;
      },
      close: async () => undefined,
    };
    const relay = createRelay({
      store,
      ...claim,
      onPublished: 'keep',
      publisher,
      batchSize: 2,
      claimHoldMs: 10_000,
    });
    // Batches take the keys in turn: bad's third event fails, and the hold goes on with good
    // alone until good has nothing left.
    expect(await relay.runOnce()).toMatchObject({ published: 8, failed: 1, dead: 0 });
    expect(payloadsOf(inner.byKey('bad'))).toEqual([0, 1].map((i) => ({ key: 'bad', i })));
    expect(payloadsOf(inner.byKey('good'))).toEqual(
      [0, 1, 2, 3, 4, 5].map((i) => ({ key: 'good', i })),
    );
    // Nothing of bad after its failed event was attempted.
    const bad = rowsOf<{ status: string; attempts: number }>(
      await store.knex.raw(
        `select status, attempts from ${store.names.table('outbox')}
         where partition_key = 'bad' order by id`,
      ),
    );
    expect(bad.map((r) => [r.status, r.attempts])).toEqual([
      ['published', 0],
      ['published', 0],
      ['pending', 1],
      ['pending', 0],
      ['pending', 0],
      ['pending', 0],
    ]);
  });

  it('loses nothing and keeps order when its connection dies in the middle of a hold', async () => {
    const keys = ['a', 'b', 'c', 'd'];
    await add(eventsOf(keys, 30));
    // The relay gets its own pool, named so the test can end exactly its sessions: by its
    // application name on PostgreSQL, by its default database on MySQL (the test's is not).
    const name = `jo-hold-${Date.now()}`;
    const url = new URL(kind === 'mysql' ? mysqlUrl() : databaseUrl());
    if (kind === 'mysql') url.pathname = `/${schema}`;
    else url.searchParams.set('application_name', name);
    const relayStore = await createStore({
      connectionString: url.toString(),
      schema,
      ...storeOptions,
    });
    const inner = createMemoryPublisher();
    let calls = 0;
    const publisher: Publisher = {
      async publish(messages) {
        calls += 1;
        if (calls === 4) {
          // A few batches into the first hold: the server ends the relay's sessions.
          if (kind === 'mysql') {
            const sessions = rowsOf<{ id: unknown }>(
              await store.knex.raw(
                'select id from information_schema.processlist where db = ? and id <> connection_id()',
                [schema],
              ),
            );
            for (const { id } of sessions) {
              await store.knex.raw(`kill connection ${Number(id)}`).catch(() => undefined);
            }
          } else {
            await store.knex.raw(
              `select pg_terminate_backend(pid) from pg_stat_activity where application_name = ?`,
              [name],
            );
          }
        }
        return inner.publish(messages);
      },
      close: async () => undefined,
    };
    const relay = createRelay({
      store: relayStore,
      ...claim,
      onPublished: 'keep',
      publisher,
      batchSize: 8,
      concurrency: 1,
      pollIntervalMs: 50,
      notify: false,
    });
    try {
      await relay.start();
      await waitFor(
        'all 120 events to be marked published',
        async () => (await statusCounts(store)).published === 120,
        { timeoutMs: 20_000, intervalMs: 10 },
      );
    } finally {
      await relay.stop();
      await relayStore.close();
    }
    // What the first hold published went out again after the rollback, with the same ids;
    // each key's first copies are complete and in order.
    for (const key of keys) {
      const firsts: number[] = [];
      const seen = new Set<string>();
      for (const m of inner.byKey(key)) {
        if (seen.has(m.messageId)) continue;
        seen.add(m.messageId);
        firsts.push((payloadsOf([m])[0] as { i: number }).i);
      }
      expect(firsts).toEqual(Array.from({ length: 30 }, (_, i) => i));
    }
    expect(inner.published.length).toBeGreaterThan(120);
  });

  it('an idle loop waits for its sibling that holds the keys instead of polling', async () => {
    await add(eventsOf(['a'], 3));
    const inner = createMemoryPublisher();
    let release: (() => void) | undefined;
    const publisher: Publisher = {
      async publish(messages) {
        // The first call holds key a until the test lets it go.
        if (release === undefined) await new Promise<void>((resolve) => (release = resolve));
        return inner.publish(messages);
      },
      close: async () => undefined,
    };
    let claims = 0;
    const stopWatching = watchStatements(store.knex, (sql) => {
      // The claim statement, whichever claim: the only one that reports its window's rows.
      if (kind === 'mysql' ? sql.startsWith('select min(w.id)') : sql.includes(' as window_rows'))
        claims += 1;
    });
    const relay = createRelay({
      store,
      ...claim,
      onPublished: 'keep',
      publisher,
      concurrency: 2,
      batchSize: 10,
      pollIntervalMs: 10,
      claimHoldMs: 5_000,
      notify: false,
    });
    try {
      await relay.start();
      await waitFor('the first call to hold key a', () => release !== undefined, SOON);
      // The other loop found key a held, and waits for the holder (or a wake) rather than
      // claiming again every 10 ms: about 30 claims in the 300 ms below if it polled.
      const before = claims;
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(claims - before).toBeLessThanOrEqual(2);
      release!();
      await inner.waitForCount(3, 5_000);
      expect(payloadsOf(inner.byKey('a'))).toEqual([0, 1, 2].map((i) => ({ key: 'a', i })));
    } finally {
      stopWatching();
      await relay.stop({ timeoutMs: 2_000 });
    }
  });

  it('publishes one batch per claim with claimHoldMs 0', async () => {
    await add(eventsOf(['a'], 5));
    const publisher = createMemoryPublisher();
    const relay = createRelay({
      store,
      ...claim,
      onPublished: 'keep',
      publisher,
      batchSize: 2,
      claimHoldMs: 0,
    });
    expect(await relay.runOnce()).toMatchObject({ claimed: 2, published: 2 });
    expect(await statusCounts(store)).toEqual({ published: 2, pending: 3 });
  });
});
