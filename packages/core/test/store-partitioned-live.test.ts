import {
  createInbox,
  createMemoryPublisher,
  createOutbox,
  createRelay,
  createStore,
  DuplicateMessageIdError,
  rowsOf,
  type Store,
} from '../src';
import { createEffectsTable, effectCounts, writeEffect } from '../../../test-support/effects';
import { waitFor } from '../../../test-support/wait-for';
import { databaseUrl, openTestStore, uniqueSchema } from './db';
import { envelope } from './fixtures/inbox-support';

const WRITERS = 4;

async function relkind(store: Store, table: string): Promise<string | undefined> {
  const result = await store.knex.raw(
    `select relkind::text as kind from pg_class where oid = to_regclass(?)`,
    [store.names.table(table)],
  );
  return rowsOf<{ kind: string }>(result)[0]?.kind;
}

/**
 * The documented move of a live `inbox_records` to the partitioned layout: a store with
 * `layout: 'partitioned'` runs `migrate()` while inboxes of plain stores keep handling new
 * messages and redeliveries of handled ones.
 */
describe('moving a live inbox_records to the partitioned layout (postgres)', () => {
  it('converts the table while inboxes write; every message is handled once, before and after', async () => {
    const schema = uniqueSchema('live');
    const plain = await openTestStore('postgres', { schema });
    await createEffectsTable(plain);
    // Records already there, so the key is built `concurrently` and the old table is kept as
    // the partition of everything before the conversion's bound.
    await plain.knex.raw(
      `insert into ${plain.names.table('inbox_records')}
         (consumer, scope, message_id, status, created_at, expires_at)
       select 'old', 'default', 'old-' || n, 'SUCCEEDED', now() - interval '1 hour',
              now() + interval '1 day'
         from generate_series(1, 20000) as n`,
    );
    const inbox = createInbox({ store: plain, consumer: 'live' });
    const handler = async (ctx: Parameters<Parameters<typeof inbox.process>[1]>[0]) => {
      await writeEffect(ctx.trx, plain, ctx.messageId, { consumer: 'live' });
    };
    let stop = false;
    const handled: string[] = [];
    const unexpected: string[] = [];
    const writer = async (w: number): Promise<void> => {
      for (let n = 0; !stop; n += 1) {
        const id = `w${w}-${n}`;
        const first = await inbox.process(envelope(id), handler);
        if (first.status !== 'processed') unexpected.push(`${id}: ${first.status}`);
        else handled.push(id);
        // A redelivery of an earlier message of this writer.
        const again = `w${w}-${Math.floor(n / 2)}`;
        const second = await inbox.process(envelope(again), handler);
        if (second.status !== 'duplicate') unexpected.push(`${again} again: ${second.status}`);
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
    const partitioned = await createStore({
      connectionString: databaseUrl(),
      schema,
      layout: 'partitioned',
    });
    try {
      await waitFor('the writers to handle messages', () => handled.length >= 4 * WRITERS);
      const before = handled.length;
      await partitioned.migrate();
      const during = handled.length;
      await waitFor(
        'more messages after the conversion',
        () => handled.length >= during + 4 * WRITERS,
      );
      stop = true;
      await Promise.all(writers);
      expect(unexpected).toEqual([]);
      expect(before).toBeGreaterThan(0);
      expect(handled.length).toBeGreaterThan(during);
      expect(await relkind(plain, 'inbox_records')).toBe('p');
      expect(await relkind(plain, 'inbox_records_plain')).toBe('r');

      // Every message handled exactly once; every one of them, old or new, is a duplicate now.
      const effects = await effectCounts(plain, { consumer: 'live' });
      expect(effects.size).toBe(handled.length);
      expect([...effects.values()].every((n) => n === 1)).toBe(true);
      const late = createInbox({ store: partitioned, consumer: 'live' });
      for (const id of [handled[0]!, handled.at(-1)!]) {
        expect((await late.process(envelope(id), handler)).status).toBe('duplicate');
      }
      const oldInbox = createInbox({ store: partitioned, consumer: 'old' });
      const redelivered = await oldInbox.process(
        { id: 'old-17', headers: {}, delivery: {}, body: 'x' },
        async () => undefined,
      );
      // A record with no fingerprint answers any payload as a duplicate.
      expect(redelivered.status).not.toBe('processed');
      const count = await plain.knex.raw(
        `select count(*)::int as n from ${plain.names.table('inbox_records')}`,
      );
      expect(rowsOf<{ n: number }>(count)[0]!.n).toBe(20000 + handled.length);
    } finally {
      stop = true;
      await Promise.allSettled(writers);
      await partitioned.close();
      await plain.dispose();
    }
  }, 120_000);
});

/** Per key, whether the first publication of each sequence number came in order, and the set. */
function keyOrder(published: ReadonlyArray<{ key: string | null; payload: Uint8Array }>): {
  seen: Set<string>;
  violations: string[];
} {
  const last = new Map<string, number>();
  const seen = new Set<string>();
  const violations: string[] = [];
  for (const m of published) {
    const { seq } = JSON.parse(Buffer.from(m.payload).toString()) as { seq: number };
    const id = `${m.key}#${seq}`;
    if (seen.has(id)) continue;
    seen.add(id);
    if ((last.get(m.key ?? '') ?? -1) > seq) violations.push(id);
    last.set(m.key ?? '', seq);
  }
  return { seen, violations };
}

/**
 * The same move for the outbox: a store with `layout: 'partitioned'` runs `migrate()` while
 * writers of plain stores add events in their transactions and a relay publishes them.
 */
describe('moving a live outbox to the partitioned layout (postgres)', () => {
  it('converts the outbox while writers add events and a relay publishes; nothing lost, order per key kept', async () => {
    const schema = uniqueSchema('liveob');
    const plain = await openTestStore('postgres', { schema });
    // Events already there (published and kept), so the old table is kept as a partition.
    await plain.knex.raw(
      `insert into ${plain.names.table('outbox')}
         (destination, partition_key, message_id, payload, status, published_at)
       select 'old', 'old-' || (n % 10), 'old-' || n, '\\x7b7d'::bytea, 'published', now()
         from generate_series(1, 20000) as n`,
    );
    const outbox = createOutbox({ store: plain });
    const publisher = createMemoryPublisher();
    const relay = createRelay({ store: plain, publisher, onPublished: 'keep', pollIntervalMs: 20 });
    await relay.start();
    let stop = false;
    let added = 0;
    const writer = async (w: number): Promise<void> => {
      for (let seq = 0; !stop; seq += 1) {
        await plain.knex.transaction((trx) =>
          outbox.add(
            trx,
            [0, 1, 2].map((k) => ({ destination: 'live', key: `w${w}-k${k}`, payload: { seq } })),
          ),
        );
        added += 3;
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
    const partitioned = await createStore({
      connectionString: databaseUrl(),
      schema,
      layout: 'partitioned',
    });
    try {
      await waitFor('the writers to add events', () => added >= 30 * WRITERS);
      await waitFor('the relay to publish', () => publisher.published.length > 0);
      await partitioned.migrate();
      const during = added;
      const publishedDuring = publisher.published.length;
      await waitFor('more events after the conversion', () => added >= during + 30 * WRITERS);
      await waitFor(
        'the relay to publish after it',
        () => publisher.published.length > publishedDuring,
      );
      stop = true;
      await Promise.all(writers);
      expect(await relkind(plain, 'outbox')).toBe('p');
      expect(await relkind(plain, 'outbox_plain')).toBe('r');
      await waitFor(
        'every event to be published',
        () => keyOrder(publisher.published).seen.size >= added,
        {
          timeoutMs: 60_000,
        },
      );
      await relay.stop();
      const { seen, violations } = keyOrder(publisher.published);
      expect(violations).toEqual([]);
      expect(seen.size).toBe(added);
      const [left] = rowsOf<{ pending: number; total: number }>(
        await plain.knex.raw(
          `select count(*) filter (where status = 'pending')::int as pending, count(*)::int as total
             from ${plain.names.table('outbox')}`,
        ),
      );
      expect(left).toEqual({ pending: 0, total: 20000 + added });
      // Ids kept increasing: the rows of each key in id order are in sequence order.
      const [disorder] = rowsOf<{ n: number }>(
        await plain.knex.raw(
          `select count(*)::int as n from (
             select id, lag(id) over (partition by partition_key
                                      order by (convert_from(payload, 'UTF8')::jsonb->>'seq')::int)
                      as prev
               from ${plain.names.table('outbox')} where destination = 'live') x
            where prev > id`,
        ),
      );
      expect(disorder!.n).toBe(0);
      const late = createOutbox({ store: partitioned });
      await expect(
        partitioned.knex.transaction((trx) =>
          late.add(trx, { destination: 'old', messageId: 'old-17', payload: {} }),
        ),
      ).rejects.toBeInstanceOf(DuplicateMessageIdError);
    } finally {
      stop = true;
      await Promise.allSettled(writers);
      await relay.stop();
      await partitioned.close();
      await plain.dispose();
    }
  }, 120_000);
});
