/**
 * The inbox's watermark dedup modes (`dedup: 'watermark'` and `'watermark+ids'`): per
 * consumer and partition, the highest offset whose effects committed, advanced in the
 * handler's transaction; records at or below it are duplicates, with no row per message.
 */
import {
  ConfigurationError,
  createInbox,
  rowsOf,
  type Envelope,
  type HandlerContext,
  type InboxOptions,
  type InboxOutcome,
  type Store,
} from '../src';
import {
  countEffects,
  createEffectsTable,
  effectCounts,
  writeEffect,
} from '../../../test-support/effects';
import { OVERLAP_MS } from '../src/inbox/sql/count-attempts';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { countRows, envelope, freshId } from './fixtures/inbox-support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** A Kafka-like record: `id` at `offset` of `topic`/`partition`, marked a first delivery. */
function record(
  id: string,
  offset: number,
  options: { topic?: string; partition?: number; first?: boolean; body?: string } = {},
): Envelope {
  const { topic = 'orders', partition = 0, first = true } = options;
  return envelope(id, options.body ?? JSON.stringify({ id }), {
    delivery: {
      ...(first ? { redelivered: false } : {}),
      position: { topic, partition, offset: String(offset) },
    },
  });
}

async function watermarkOf(
  store: Store,
  consumer: string,
  topic = 'orders',
  partition = 0,
): Promise<string | undefined> {
  const mysql = store.dialect === 'mysql';
  const result = await store.knex.raw(
    `select ${mysql ? 'cast(high_offset as char)' : 'high_offset::text'} as h
       from ${store.names.table('inbox_offsets')}
      where consumer = ? and topic = ? and ${mysql ? '`partition`' : 'partition'} = ?`,
    [consumer, topic, partition],
  );
  return rowsOf<{ h: string }>(result)[0]?.h;
}

async function rowsOfConsumer(store: Store, table: string, consumer: string): Promise<number> {
  const result = await store.knex.raw(
    `select ${store.dialect === 'mysql' ? 'count(*)' : 'count(*)::int'} as n
       from ${store.names.table(table)} where consumer = ?`,
    [consumer],
  );
  return Number(rowsOf<{ n: number }>(result)[0]?.n ?? 0);
}

const statuses = (outcomes: readonly InboxOutcome<unknown>[]): string[] =>
  outcomes.map((o) => o.status);

describe.each(ALL_STORE_KINDS)('inbox watermark modes on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  function setup(extra: Partial<InboxOptions> = {}) {
    const consumer = freshId('wm');
    const inbox = createInbox({ store, consumer, dedup: 'watermark', ...extra });
    const ran: string[] = [];
    const effect = async (ctx: HandlerContext) => {
      ran.push(ctx.messageId);
      await writeEffect(ctx.trx, store, ctx.messageId, { consumer });
      return ctx.messageId;
    };
    return { consumer, inbox, ran, effect };
  }

  it('a batch writes no row per message, and its redelivery is answered duplicate', async () => {
    const { consumer, inbox, ran, effect } = setup();
    const records = Array.from({ length: 50 }, (_, i) => record(freshId(), i));
    expect(new Set(statuses(await inbox.processBatch(records, effect)))).toEqual(
      new Set(['processed']),
    );
    expect(ran).toHaveLength(50);
    expect(await watermarkOf(store, consumer)).toBe('49');
    expect(await rowsOfConsumer(store, 'inbox_records', consumer)).toBe(0);
    expect(await rowsOfConsumer(store, 'inbox_attempts', consumer)).toBe(0);
    expect(await rowsOfConsumer(store, 'inbox_offsets', consumer)).toBe(1);

    // Redelivered (a crash after the commit, before the offset commit): every record is done.
    const again = await inbox.processBatch(records, effect);
    expect(new Set(statuses(again))).toEqual(new Set(['duplicate']));
    expect(ran).toHaveLength(50);
    expect(await countEffects(store, undefined, { consumer })).toBe(50);
  });

  it('runs handlers in offset order and keeps partitions apart', async () => {
    const { consumer, inbox, ran, effect } = setup();
    const a = [record('a0', 0), record('a1', 1), record('a2', 2)];
    const b = [record('b0', 7, { partition: 1 }), record('b1', 8, { partition: 1 })];
    await inbox.processBatch([a[0], b[0], a[1], b[1], a[2]] as Envelope[], effect);
    expect(ran).toEqual(['a0', 'b0', 'a1', 'b1', 'a2']);
    expect(await watermarkOf(store, consumer, 'orders', 0)).toBe('2');
    expect(await watermarkOf(store, consumer, 'orders', 1)).toBe('8');
    // Offset 3 of partition 0 is new although partition 1 is at 8.
    expect((await inbox.process(record('a3', 3), effect)).status).toBe('processed');
  });

  it('assumes no contiguous offsets: gaps, seeks back and forward', async () => {
    const { consumer, inbox, ran, effect } = setup();
    // Compaction and transaction markers leave gaps.
    expect(
      statuses(await inbox.processBatch([record('g10', 10), record('g13', 13)], effect)),
    ).toEqual(['processed', 'processed']);
    // A seek back: at or below the watermark is done, even an offset that was never seen.
    expect((await inbox.process(record('g11', 11), effect)).status).toBe('duplicate');
    expect((await inbox.process(record('g13', 13), effect)).status).toBe('duplicate');
    // A seek forward skips offsets: they are simply not delivered.
    expect((await inbox.process(record('g90', 90), effect)).status).toBe('processed');
    expect(ran).toEqual(['g10', 'g13', 'g90']);
    expect(await watermarkOf(store, consumer)).toBe('90');
  });

  it('a failed handler rolls back and leaves the watermark where it was', async () => {
    const { consumer, inbox, effect } = setup();
    await inbox.process(record('r0', 0), effect);
    const failed = await inbox.process(record('r1', 1), async () => {
      throw new Error('boom');
    });
    expect(failed).toMatchObject({ status: 'failed', retriable: true });
    expect(await watermarkOf(store, consumer)).toBe('0');
    expect((await inbox.process(record('r1', 1), effect)).status).toBe('processed');
    expect(await watermarkOf(store, consumer)).toBe('1');
  });

  it('a failure in a batch holds back the later records of its partition only', async () => {
    const { consumer, inbox, ran, effect } = setup();
    let failing = true;
    const handler = async (ctx: HandlerContext) => {
      if (ctx.messageId === 'h2' && failing) throw new Error('not yet');
      return effect(ctx);
    };
    const batch = [
      record('h0', 0),
      record('h1', 1),
      record('h2', 2),
      record('other', 5, { partition: 3 }),
      record('h3', 3),
    ];
    const outcomes = await inbox.processBatch(batch, handler);
    expect(statuses(outcomes)).toEqual(['processed', 'processed', 'failed', 'processed', 'failed']);
    expect(outcomes[4]).toMatchObject({
      retriable: true,
      retryDelayMs: 0,
      error: { code: 'EARLIER_RECORD_FAILED' },
    });
    expect(await watermarkOf(store, consumer, 'orders', 0)).toBe('1');
    expect(await watermarkOf(store, consumer, 'orders', 3)).toBe('5');
    expect((await effectCounts(store, { consumer })).get('h3')).toBeUndefined();

    failing = false;
    const redelivered = await inbox.processBatch(batch.slice(2), handler);
    expect(statuses(redelivered)).toEqual(['processed', 'duplicate', 'processed']);
    // `ran` also lists the handlers of the rolled-back first pass; effects count once.
    expect(ran.at(-1)).toBe('h3');
    const effects = await effectCounts(store, { consumer });
    expect(['h0', 'h1', 'h2', 'h3', 'other'].map((id) => effects.get(id))).toEqual([1, 1, 1, 1, 1]);
    expect(await watermarkOf(store, consumer, 'orders', 0)).toBe('3');
  });

  it('one delivery per transaction after an unfinished attempt: a failure holds back the rest', async () => {
    const { consumer, inbox, effect } = setup({ backoff: { random: () => 0 } });
    let failing = true;
    const handler = async (ctx: HandlerContext) => {
      if (ctx.messageId === 'u1' && failing) throw new Error('not yet');
      return effect(ctx);
    };
    // u1 failed once already: its counter makes the chunk run one delivery per transaction.
    const records = [0, 1, 2].map((o) => record(`u${o}`, o, { first: false }));
    expect((await inbox.process(records[1] as Envelope, handler)).status).toBe('failed');
    const outcomes = await inbox.processBatch(records, handler);
    expect(statuses(outcomes)).toEqual(['processed', 'failed', 'failed']);
    expect(outcomes[2]).toMatchObject({ error: { code: 'EARLIER_RECORD_FAILED' } });
    expect(await watermarkOf(store, consumer)).toBe('0');
    // Had u2 committed, the watermark would be past u1, and u1's redelivery a "duplicate".
    failing = false;
    expect(statuses(await inbox.processBatch(records.slice(1), handler))).toEqual([
      'processed',
      'processed',
    ]);
    const effects = await effectCounts(store, { consumer });
    expect(['u0', 'u1', 'u2'].map((id) => effects.get(id))).toEqual([1, 1, 1]);
    expect(await rowsOfConsumer(store, 'inbox_attempts', consumer)).toBe(0);
  });

  it('a message that keeps failing or crashing is dead-lettered', async () => {
    const { consumer, inbox } = setup({ maxAttempts: 3, backoff: { random: () => 0 } });
    // Not marked first: counted durably, as Kafka counts the first chunks after an assignment.
    const poison = record('poison', 4, { first: false });
    const failing = async () => {
      throw new Error('always');
    };
    expect((await inbox.process(poison, failing)).status).toBe('failed');
    expect((await inbox.process(poison, failing)).status).toBe('failed');
    const last = await inbox.process(poison, failing);
    expect(last).toMatchObject({ status: 'dead-lettered', reason: 'MAX_ATTEMPTS', attempt: 3 });
    expect(await rowsOfConsumer(store, 'dead_letters', consumer)).toBe(1);
    // A redelivery (the offset commit was lost) writes no second letter.
    const again = await inbox.process(poison, failing);
    expect(again).toMatchObject({
      status: 'dead-lettered',
      error: { code: 'ALREADY_DEAD_LETTERED' },
    });
    expect(await rowsOfConsumer(store, 'dead_letters', consumer)).toBe(1);

    // A record that kills the process at every delivery: the throw from `onStep` stands in
    // for the crash, after the handler and before the commit.
    const crashing = setup({
      maxAttempts: 2,
      onStep: (step, id) => {
        if (step === 'handler-done' && id === 'killer') throw new Error('process died');
      },
    });
    const killer = record('killer', 0, { first: false });
    await expect(crashing.inbox.process(killer, crashing.effect)).rejects.toThrow('process died');
    await expect(crashing.inbox.process(killer, crashing.effect)).rejects.toThrow('process died');
    // A process that died leaves no live session behind its count; this one's session lives,
    // so the next count would read as a copy delivered at the same time until OVERLAP_MS passed.
    await new Promise((resolve) => setTimeout(resolve, OVERLAP_MS + 100));
    expect(await crashing.inbox.process(killer, crashing.effect)).toMatchObject({
      status: 'dead-lettered',
      reason: 'MAX_ATTEMPTS',
    });
    expect(await countEffects(store, 'killer', { consumer: crashing.consumer })).toBe(0);
    // The counters are gone once handled or dead-lettered.
    const next = await crashing.inbox.process(
      record('after', 1, { first: false }),
      crashing.effect,
    );
    expect(next.status).toBe('processed');
    expect(await rowsOfConsumer(store, 'inbox_attempts', crashing.consumer)).toBe(0);
  });

  it('counted deliveries run together; a dead-lettered one among them stays dead-lettered', async () => {
    const { consumer, inbox, ran, effect } = setup({ maxAttempts: 1 });
    // Not marked first, as the first chunk after an assignment: counted, in one statement.
    const dead = record('dead', 1, { first: false });
    expect(
      await inbox.process(dead, async () => {
        throw new Error('poison');
      }),
    ).toMatchObject({ status: 'dead-lettered', reason: 'MAX_ATTEMPTS' });
    expect(await watermarkOf(store, consumer)).toBeUndefined();
    // The dead letter's offset commit was lost: the chunk comes again from offset 0.
    const chunk = [0, 1, 2, 3].map((o) => (o === 1 ? dead : record(`c${o}`, o, { first: false })));
    const outcomes = await inbox.processBatch(chunk, effect);
    expect(statuses(outcomes)).toEqual(['processed', 'dead-lettered', 'processed', 'processed']);
    expect(outcomes[1]).toMatchObject({ error: { code: 'ALREADY_DEAD_LETTERED' } });
    expect(ran).toEqual(['c0', 'c2', 'c3']);
    expect(await watermarkOf(store, consumer)).toBe('3');
    expect(await rowsOfConsumer(store, 'inbox_attempts', consumer)).toBe(0);
    expect(await rowsOfConsumer(store, 'dead_letters', consumer)).toBe(1);
  });

  it('two consumers that both think they own a partition: the compare-and-set lets one through', async () => {
    const consumer = freshId('owners');
    const ran: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started!: () => void;
    const inA = new Promise<void>((resolve) => {
      started = resolve;
    });
    const handler = (owner: string, wait: boolean) => async (ctx: HandlerContext) => {
      if (wait) {
        started();
        await held;
      }
      ran.push(`${owner}:${ctx.messageId}`);
      await writeEffect(ctx.trx, store, ctx.messageId, { consumer, note: owner });
    };
    const a = createInbox({ store, consumer, dedup: 'watermark' });
    const b = createInbox({ store, consumer, dedup: 'watermark' });
    // The old owner has 10..12; the new one fetched 10..15 from the committed offset.
    const oldBatch = [10, 11, 12].map((o) => record(`m${o}`, o));
    const newBatch = [10, 11, 12, 13, 14, 15].map((o) => record(`m${o}`, o));
    const first = a.processBatch(oldBatch, handler('a', true));
    await inA;
    const second = b.processBatch(newBatch, handler('b', false));
    // b waits on a's row lock (PostgreSQL) or for a's connection (PGlite).
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    expect(new Set(statuses(await first))).toEqual(new Set(['processed']));
    expect(statuses(await second)).toEqual([
      'duplicate',
      'duplicate',
      'duplicate',
      'processed',
      'processed',
      'processed',
    ]);
    const counts = await effectCounts(store, { consumer });
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(counts.size).toBe(6);
    expect(await watermarkOf(store, consumer)).toBe('15');
  });

  it('a partition that comes back after another consumer advanced it', async () => {
    const consumer = freshId('back');
    const handler = (owner: string) => async (ctx: HandlerContext) => {
      await writeEffect(ctx.trx, store, ctx.messageId, { consumer, note: owner });
    };
    const a = createInbox({ store, consumer, dedup: 'watermark' });
    const b = createInbox({ store, consumer, dedup: 'watermark' });
    const records = Array.from({ length: 13 }, (_, o) => record(`n${o}`, o));
    await a.processBatch(records.slice(0, 5), handler('a'));
    // A rebalance gives the partition to b, which handles 5..9, and back to a, which fetches
    // from an offset b had not committed to Kafka yet: a knows only its own watermark, 4.
    await b.processBatch(records.slice(5, 10), handler('b'));
    const back = await a.processBatch(records.slice(5), handler('a'));
    expect(statuses(back)).toEqual([
      ...Array<string>(5).fill('duplicate'),
      'processed',
      'processed',
      'processed',
    ]);
    const counts = await effectCounts(store, { consumer });
    expect(counts.size).toBe(13);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(await watermarkOf(store, consumer)).toBe('12');
  });

  it('watermark+ids also catches a producer copy at another offset, with short-lived id rows', async () => {
    const { consumer, inbox, ran, effect } = setup({
      dedup: 'watermark+ids',
      idRetentionMs: 60_000,
    });
    expect(inbox.settings?.dedup).toBe('watermark+ids');
    const id = freshId();
    expect((await inbox.process(record(id, 0), effect)).status).toBe('processed');
    // The same message again at a later offset (a producer's retry).
    expect((await inbox.process(record(id, 1), effect)).status).toBe('duplicate');
    expect(statuses(await inbox.processBatch([record('x', 2), record(id, 3)], effect))).toEqual([
      'processed',
      'duplicate',
    ]);
    expect(ran).toEqual([id, 'x']);
    expect(await watermarkOf(store, consumer)).toBe('3');
    const result = await store.knex.raw(
      kind === 'mysql'
        ? `select count(*) as n from ${store.names.table('inbox_records')}
            where consumer = ? and expires_at < current_timestamp(6) + interval 2 minute`
        : `select count(*)::int as n from ${store.names.table('inbox_records')}
            where consumer = ? and expires_at < now() + interval '2 minutes'`,
      [consumer],
    );
    expect(Number(rowsOf<{ n: number }>(result)[0]?.n)).toBe(2);

    // In `watermark` mode alone, the producer's copy is handled again: that is the contract.
    const plain = setup();
    await plain.inbox.process(record(id, 0), plain.effect);
    expect((await plain.inbox.process(record(id, 1), plain.effect)).status).toBe('processed');
  });

  it('a delivery without a position is a configuration error, and nothing is written', async () => {
    const { consumer, inbox, effect } = setup();
    const before = await countRows(store, 'dead_letters');
    await expect(inbox.process(envelope(freshId()), effect)).rejects.toThrow(ConfigurationError);
    await expect(
      inbox.processBatch(
        [
          envelope('p', 'x', {
            delivery: { position: { topic: 't', partition: 0, offset: '-1' } },
          }),
        ],
        effect,
      ),
    ).rejects.toThrow(/needs every delivery's position/);
    expect(await countRows(store, 'dead_letters')).toBe(before);
    expect(await rowsOfConsumer(store, 'inbox_offsets', consumer)).toBe(0);
  });

  it('validates the mode and the id retention at construction', () => {
    const consumer = freshId('opts');
    expect(() => createInbox({ store, consumer, dedup: 'offsets' as never })).toThrow(
      /dedup must be one of ids, watermark, watermark\+ids/,
    );
    expect(() => createInbox({ store, consumer, idRetentionMs: 1000 })).toThrow(
      /idRetentionMs applies to dedup 'watermark\+ids' only/,
    );
    expect(() =>
      createInbox({
        store,
        consumer,
        dedup: 'watermark+ids',
        retentionMs: 1000,
        idRetentionMs: 2000,
      }),
    ).toThrow(/idRetentionMs must be an integer from 1 to 1000/);
    expect(createInbox({ store, consumer }).settings?.dedup).toBe('ids');
  });
});
