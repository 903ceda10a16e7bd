import type { Knex } from 'knex';
import { Client } from 'pg';
import { createMemoryPublisher, createOutbox, createRelay, rowsOf, type Store } from '../src';
import { openTestStore } from './db';
import { watchStatements } from './fixtures/statements';

/** Key walks (the claim's second statement) sent through node-postgres by this process. */
let walks = 0;
// Before any store connects: the store binds each new connection's `query` as it finds it.
const pgProto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
const pgQuery = pgProto.query;
pgProto.query = function query(this: unknown, ...args: unknown[]) {
  const first = args[0];
  const text = typeof first === 'string' ? first : String((first as { text?: unknown }).text);
  if (text.startsWith('with recursive walk')) walks += 1;
  return pgQuery.apply(this, args);
};
afterAll(() => {
  pgProto.query = pgQuery;
});

describe.each(['postgres', 'mysql'] as const)(
  'a relay whose backlog is held by another relay (%s)',
  (kind) => {
    let store: Store & { dispose(): Promise<void> };
    let holder: Knex.Transaction | undefined;
    let stopWatching = (): void => undefined;
    beforeAll(async () => {
      store = await openTestStore(kind);
      // 1 200 events over 4 keys: more than the claim's window of 1 000.
      if (kind === 'mysql') {
        await store.knex.transaction((trx) =>
          createOutbox({ store }).add(
            trx,
            Array.from({ length: 1200 }, (_, g) => ({
              destination: 'held',
              key: `key-${(g + 1) % 4}`,
              payload: 0,
            })),
          ),
        );
        // MySQL's statements go through knex: its walks are seen there.
        stopWatching = watchStatements(store.knex, (sql) => {
          if (sql.trimStart().startsWith('select w.partition_key as k')) walks += 1;
        });
      } else {
        await store.knex.raw(
          `insert into ${store.names.table('outbox')} (destination, partition_key, message_id, payload)
       select 'held', 'key-' || (g % 4), 'm-' || g, '\\x00'::bytea
       from generate_series(1, 1200) as g`,
        );
      }
    });
    afterAll(async () => {
      stopWatching();
      await holder?.rollback().catch(() => undefined);
      await store.dispose();
    });

    it('walks the keys once, not again on every claim until the holds can have ended', async () => {
      // Another relay's cycle: it holds every key's head.
      holder = await store.knex.transaction();
      const t = store.names.table('outbox');
      const heads = rowsOf<{ id: unknown }>(
        await holder.raw(`select min(id) as id from ${t} group by partition_key`),
      ).map((row) => String(row.id));
      const held = rowsOf<{ id: string }>(
        await holder.raw(
          `select id from ${t} where id in (${heads.map(() => '?').join(', ')}) for update`,
          heads,
        ),
      );
      expect(held).toHaveLength(4);
      const publisher = createMemoryPublisher();
      const relay = createRelay({
        store,
        publisher,
        notify: false,
        leaseMs: 30_000,
        claimHoldMs: 10_000,
      });
      const before = walks;
      expect((await relay.runOnce()).claimed).toBe(0);
      expect(walks - before).toBe(1);
      // Every key was walked and found held: the next claims within the hold do not walk again.
      expect((await relay.runOnce()).claimed).toBe(0);
      expect((await relay.runOnce()).claimed).toBe(0);
      expect(walks - before).toBe(1);
      // Once the holds end, the keys are claimed from the window as usual.
      await holder.rollback();
      holder = undefined;
      expect((await relay.runOnce()).claimed).toBeGreaterThan(0);
    });
  },
);
