import fc from 'fast-check';
import {
  ConfigurationError,
  createMemoryPublisher,
  createOutbox,
  createRelay,
  createStore,
  rowsOf,
  type OutboxEvent,
  type Publisher,
  type Store,
} from '../src';
import { openTestStore, PER_KEY_CLAIM, type StoreKind } from './db';
import { watchStatements } from './fixtures/statements';
import { runUntilIdle } from './fixtures/run-until-idle';
import { waitFor } from '../../../test-support/wait-for';

describe("createRelay({ claim: 'per-key' })", () => {
  const stores: Array<{ close(): Promise<void> }> = [];
  /** A store to construct relays on; PGlite's is not migrated, which the check needs not. */
  const open = async (kind: StoreKind, options: object = {}): Promise<Store> => {
    if (kind === 'pglite') {
      const store = await createStore({ ...options, pglite: {} });
      stores.push(store);
      return store;
    }
    const store = await openTestStore(kind, options);
    stores.push({ close: () => store.dispose() });
    return store;
  };
  afterAll(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });

  it('accepts only its two values', async () => {
    const store = await open('postgres', PER_KEY_CLAIM.store);
    const publisher = createMemoryPublisher();
    expect(createRelay({ store, publisher, claim: 'batch' }).ownerId).toEqual(expect.any(String));
    expect(createRelay({ store, publisher, claim: 'per-key' }).ownerId).toEqual(expect.any(String));
    fc.assert(
      fc.property(
        fc
          .anything()
          .filter((value) => value !== undefined && value !== 'batch' && value !== 'per-key'),
        (claim) => {
          expect(() => createRelay({ store, publisher, claim: claim as never })).toThrow(
            ConfigurationError,
          );
        },
      ),
      { seed: Number(process.env.FC_SEED ?? 1), numRuns: 200 },
    );
    for (const claim of ['PER-KEY', 'per_key', 'perKey', ' per-key', '']) {
      expect(() => createRelay({ store, publisher, claim: claim as never })).toThrow(
        expect.objectContaining({ code: 'INVALID_CONFIG', details: { claim } }),
      );
    }
  });

  it.each([
    ['PostgreSQL without the distributable schema', 'postgres', {}],
    ['PGlite, even with the distributable schema', 'pglite', PER_KEY_CLAIM.store],
    ['MySQL or MariaDB', 'mysql', {}],
  ] as const)(
    'is refused on %s, where the batch claim is accepted',
    async (_label, kind, options) => {
      const store = await open(kind, options);
      const publisher = createMemoryPublisher();
      expect(() => createRelay({ store, publisher, claim: 'per-key' })).toThrow(
        expect.objectContaining({
          code: 'INVALID_CONFIG',
          message: expect.stringContaining("distribution 'distributable'") as unknown,
        }),
      );
      expect(createRelay({ store, publisher, claim: 'batch' }).ownerId).toEqual(expect.any(String));
    },
  );
});

/** What the statement check below saw of each kind. */
interface Seen {
  locks: number;
  keylessLocks: number;
  updates: number;
  deletes: number;
  inserts: number;
  reads: number;
}

/**
 * Checks one statement sent on the store's connections: a statement that locks outbox rows,
 * or updates or deletes them, must name each outbox row it reaches by the distribution key
 * with equality (on a distributed table, one shard), and none may name rows by `ctid`.
 * Returns a description of what is wrong, or null.
 */
function checkStatement(sql: string, outbox: string, seen: Seen): string | null {
  if (!sql.includes(outbox)) return null;
  const text = sql.replace(/\s+/g, ' ').trim();
  const param = String.raw`(?:\$\d+|\?)`;
  if (/\bctid\b/.test(text)) return 'names rows by ctid';
  const escaped = outbox.replace(/[.*+?^${}()|[\]\\"]/g, '\\$&');
  if (/\bfor update\b/i.test(text)) {
    // Every outbox alias of the statement is filtered by its distribution key.
    const aliases = [...text.matchAll(new RegExp(`from ${escaped} (\\w+)`, 'g'))].map((m) => m[1]!);
    if (aliases.length === 0) return 'locks outbox rows without an alias to check';
    for (const alias of aliases) {
      if (!new RegExp(`\\b${alias}\\.distribution_key = ${param}`).test(text)) {
        return `locks with outbox alias ${alias} not filtered by distribution_key`;
      }
    }
    if (/partition_key is null/.test(text)) seen.keylessLocks += 1;
    else seen.locks += 1;
    return null;
  }
  const write = new RegExp(`^(update|delete from) ${escaped} `).exec(text);
  if (write !== null) {
    if (!new RegExp(`\\bwhere (\\w+\\.)?distribution_key = ${param}`).test(text)) {
      return `${write[1]} without distribution_key in its where clause`;
    }
    if (write[1] === 'update') seen.updates += 1;
    else seen.deletes += 1;
    return null;
  }
  if (new RegExp(`^insert into ${escaped}`).test(text)) {
    if (!/distribution_key/.test(text)) return 'inserts without the distribution key';
    seen.inserts += 1;
    return null;
  }
  if (/\b(update|delete from) /i.test(text)) return 'writes the outbox in a form not checked';
  seen.reads += 1;
  return null;
}

describe('the per-key relay on the distributable schema', () => {
  let store: Store & { dispose(): Promise<void> };
  const add = (events: OutboxEvent[]): Promise<string[]> =>
    store.knex.transaction((trx) => createOutbox({ store }).add(trx, events));
  beforeAll(async () => {
    store = await openTestStore('postgres', PER_KEY_CLAIM.store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('locks, marks and deletes outbox rows only by distribution key, never by ctid', async () => {
    const outbox = store.names.table('outbox');
    const seen: Seen = { locks: 0, keylessLocks: 0, updates: 0, deletes: 0, inserts: 0, reads: 0 };
    const problems: string[] = [];
    // The test's own statements that are not the relay's (below) are left out.
    let own = false;
    const stop = watchStatements(store.knex, (sql) => {
      if (own) return;
      const problem = checkStatement(sql, outbox, seen);
      if (problem !== null) problems.push(`${problem}: ${sql}`);
    });
    try {
      // More events of one key than the claim's window holds, with its head failing and
      // backing off: the other keys are found by the key walk.
      await add(
        Array.from({ length: 1_050 }, (_, i) => ({ destination: 'd', key: 'deep', payload: i })),
      );
      const events: OutboxEvent[] = [];
      for (let i = 0; i < 12; i += 1) {
        for (const key of ['a', 'b', 'c', null]) {
          events.push({ destination: 'd', key, payload: { key, i, pad: 'x'.repeat(i * 100) } });
        }
      }
      events.push({ destination: 'd', key: 'poison', payload: 'poison' });
      await add(events);
      const publisher = createMemoryPublisher();
      const healDeep = publisher.failKey('deep');
      const healPoison = publisher.failKey('poison', { retriable: false });
      const relay = createRelay({
        store,
        publisher,
        ...PER_KEY_CLAIM.relay,
        onPublished: 'keep',
        batchSize: 5,
        concurrency: 1,
        claimHoldMs: 50,
        backoff: { baseMs: 60_000, capMs: 60_000 },
      });
      const sequence = (key: string | null): number[] =>
        publisher
          .byKey(key)
          .map((m) => (JSON.parse(Buffer.from(m.payload).toString()) as { i: number }).i);
      const twelve = Array.from({ length: 12 }, (_, i) => i);
      await waitFor(
        'every key but the failing one to be published, and poison to be dead',
        async () => {
          await relay.runOnce();
          return (
            ['a', 'b', 'c', null].every((key) => sequence(key).length === 12) &&
            (await relay.listDead()).length === 1
          );
        },
        { timeoutMs: 30_000, intervalMs: 0 },
      );
      expect(publisher.byKey('deep')).toHaveLength(0);
      for (const key of ['a', 'b', 'c', null]) expect(sequence(key)).toEqual(twelve);
      const [dead] = await relay.listDead();
      expect(dead).toMatchObject({ key: 'poison' });
      // The dead event requeued, and the deep key healed, with a relay that deletes.
      healPoison();
      healDeep();
      expect(await relay.requeue(dead!.id)).not.toBeNull();
      own = true;
      await store.knex.raw(
        `update ${outbox} set available_at = now() where partition_key = 'deep'`,
      );
      own = false;
      const deleting = createRelay({ store, publisher, ...PER_KEY_CLAIM.relay, batchSize: 200 });
      await runUntilIdle(deleting);
      expect(
        publisher.byKey('deep').map((m) => JSON.parse(Buffer.from(m.payload).toString())),
      ).toEqual(Array.from({ length: 1_050 }, (_, i) => i));
      expect(publisher.byKey('poison')).toHaveLength(1);
      // Published rows kept by the first relay are cleaned up per key.
      expect(await relay.cleanup({ olderThanMs: 0, batchSize: 7 })).toBe(48);
      expect(
        rowsOf<{ n: unknown }>(await store.knex.raw(`select count(*) as n from ${outbox}`)),
      ).toEqual([{ n: '0' }]);
    } finally {
      stop();
    }
    expect(problems).toEqual([]);
    // Every kind of statement ran: the check above is not vacuous.
    expect(seen.locks).toBeGreaterThan(0);
    expect(seen.keylessLocks).toBeGreaterThan(0);
    expect(seen.updates).toBeGreaterThan(0);
    expect(seen.deletes).toBeGreaterThan(0);
    expect(seen.inserts).toBeGreaterThan(0);
    expect(seen.reads).toBeGreaterThan(0);
  });

  it('keeps per-key order with several relays claiming at once in one process', async () => {
    await store.knex.raw(`delete from ${store.names.table('outbox')}`);
    const keys = Array.from({ length: 40 }, (_, k) => `k${k}`);
    const perKey = 25;
    const events: OutboxEvent[] = [];
    for (let i = 0; i < perKey; i += 1) {
      for (const key of keys) events.push({ destination: 'd', key, payload: { key, i } });
      events.push({ destination: 'd', key: null, payload: { key: null, i } });
    }
    const inner = createMemoryPublisher();
    const inFlight = new Set<string>();
    let keyInTwoCalls = false;
    const publisher: Publisher = {
      async publish(messages) {
        const mine = new Set(messages.flatMap((m) => (m.key === null ? [] : [m.key])));
        for (const key of mine) {
          keyInTwoCalls ||= inFlight.has(key);
          inFlight.add(key);
        }
        try {
          await new Promise((resolve) => setImmediate(resolve));
          return await inner.publish(messages);
        } finally {
          for (const key of mine) inFlight.delete(key);
        }
      },
      close: async () => undefined,
    };
    const relays = Array.from({ length: 4 }, () =>
      createRelay({
        store,
        publisher,
        ...PER_KEY_CLAIM.relay,
        batchSize: 20,
        concurrency: 2,
        pollIntervalMs: 20,
      }),
    );
    await Promise.all(relays.map((relay) => relay.start()));
    try {
      // Events keep arriving while the relays run.
      for (let at = 0; at < events.length; at += 150) await add(events.slice(at, at + 150));
      await inner.waitForCount(events.length, 30_000);
    } finally {
      await Promise.all(relays.map((relay) => relay.stop()));
    }
    expect(keyInTwoCalls).toBe(false);
    // No relay crashed: each event exactly once, each key in order.
    expect(new Set(inner.published.map((m) => m.messageId)).size).toBe(events.length);
    expect(inner.published).toHaveLength(events.length);
    for (const key of keys) {
      expect(
        inner
          .byKey(key)
          .map((m) => (JSON.parse(Buffer.from(m.payload).toString()) as { i: number }).i),
      ).toEqual(Array.from({ length: perKey }, (_, i) => i));
    }
  });
});
