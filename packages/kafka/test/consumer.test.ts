import type { Admin, Kafka, Producer } from 'kafkajs';
import {
  createDeadLetters,
  createInbox,
  type HandlerContext,
  type InboxOutcome,
  type SettledEvent,
} from '@justonce/core';
import {
  createKafkaConsumer,
  DEAD_LETTER_HEADERS,
  DEAD_LETTER_POSITION_HEADERS,
  type KafkaConsumerOptions,
  type KafkaConsumer,
  type KafkaDelivery,
} from '../src';
import {
  FAST_GROUP,
  createTopics,
  openEffectsStore,
  produce,
  readTopic,
  unique,
  connectKafkaClients,
  type KafkaClients,
} from './support';
import { waitFor } from '../../../test-support/wait-for';

type EffectsStore = Awaited<ReturnType<typeof openEffectsStore>>;

let kafka: Kafka;
let admin: Admin;
let producer: Producer;
let clients: KafkaClients;
let store: EffectsStore;
const running: KafkaConsumer[] = [];

beforeAll(async () => {
  clients = await connectKafkaClients();
  ({ kafka, admin, producer } = clients);
  store = await openEffectsStore();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop()));
});

afterAll(async () => {
  await clients.close();
  await store.dispose();
});

/** Committed offsets of a group, summed over partitions, equal the topic's end offsets. */
async function fullyCommitted(groupId: string, topic: string): Promise<boolean> {
  const [committed, ends] = await Promise.all([
    admin.fetchOffsets({ groupId, topics: [topic] }),
    admin.fetchTopicOffsets(topic),
  ]);
  const byPartition = new Map(committed[0]!.partitions.map((p) => [p.partition, p.offset]));
  return ends.every((e) => byPartition.get(e.partition) === e.high);
}

/** The inbox of the poison tests: three attempts, a short backoff, bodies as text. */
function poisonInbox(name: string) {
  return createInbox({
    store,
    consumer: name,
    maxAttempts: 3,
    backoff: { baseMs: 50, capMs: 100 },
    decode: (body) => Buffer.from(body).toString(),
  });
}

/** A handler that writes one effect row per message, in the inbox transaction. */
function recordEffect(consumer: string) {
  return async (ctx: HandlerContext): Promise<void> => {
    await ctx.trx.raw(
      `insert into ${store.effectsTable} (message_id, key, body, consumer) values (?, ?, ?, ?)`,
      [ctx.messageId, ctx.message.key ?? null, String(ctx.payload), consumer],
    );
  };
}

/** '0', '1', … up to `count - 1`. */
function numbers(count: number): string[] {
  return Array.from({ length: count }, (_, i) => String(i));
}

/**
 * A fresh one-partition topic holding a record for each of `values` (its message id
 * `<name>-<value>`), with a fresh group id and consumer name.
 */
async function topicWith(label: string, values: readonly string[]) {
  const topic = unique(label);
  const groupId = unique('g');
  const name = unique('c');
  await createTopics(admin, [topic], 1);
  await produce(
    producer,
    topic,
    values.map((value) => ({ value, headers: { 'message-id': `${name}-${value}` } })),
  );
  return { topic, groupId, name };
}

/**
 * A consumer of `topic` in group `groupId` with what every test here shares: this suite's
 * client, reading from the beginning unless told otherwise, and quick rebalances.
 */
function testConsumer<R>(
  topic: string,
  groupId: string,
  options: Omit<KafkaConsumerOptions<R>, 'kafka' | 'groupId' | 'topics' | 'consumerConfig'>,
): KafkaConsumer {
  return createKafkaConsumer<R>({
    fromBeginning: true,
    ...options,
    kafka,
    groupId,
    topics: [topic],
    consumerConfig: FAST_GROUP,
  });
}

function start(consumer: KafkaConsumer): Promise<void> {
  running.push(consumer);
  return consumer.start();
}

describe.each(['batch', 'message'] as const)('createKafkaConsumer in %s mode', (mode) => {
  it('gives N messages plus duplicates at other offsets exactly one effect each, in key order', async () => {
    const topic = unique('dup');
    const groupId = unique('g');
    const name = unique('c');
    await createTopics(admin, [topic], 3);
    const unique60 = Array.from({ length: 60 }, (_, i) => ({
      key: `k${i % 6}`,
      value: String(i),
      headers: { 'message-id': `${name}-m${i}` },
    }));
    // Every fourth message again, later in its partition: same id, a different offset.
    const duplicates = unique60.filter((_, i) => i % 4 === 0);
    await produce(producer, topic, unique60);
    await produce(producer, topic, duplicates);

    const outcomes: InboxOutcome[] = [];
    await start(
      testConsumer(topic, groupId, {
        mode,
        batchSize: 16,
        concurrency: 3,
        inbox: createInbox({
          store,
          consumer: name,
          decode: (body) => Buffer.from(body).toString(),
        }),
        handler: recordEffect(name),
        onSettled: ({ outcome }) => void (outcome && outcomes.push(outcome)),
      }),
    );

    await waitFor('all offsets committed', () => fullyCommitted(groupId, topic), {
      timeoutMs: 45_000,
      intervalMs: 100,
    });
    const counts = await store.effectCounts();
    const mine = [...counts].filter(([id]) => id.startsWith(`${name}-`));
    expect(mine).toHaveLength(60);
    expect(mine.every(([, n]) => n === 1)).toBe(true);
    expect(outcomes.filter((o) => o.status === 'processed')).toHaveLength(60);
    expect(outcomes.filter((o) => o.status === 'duplicate')).toHaveLength(duplicates.length);

    // Per key (so per partition), transactions commit in production order. In message mode
    // each record is its own transaction, so effects are written in production order; in
    // batch mode the records of one transaction take effect together.
    const rows = (await store.knex.raw(
      `select key, body, seq, txid from ${store.effectsTable} where consumer = ? order by body::int`,
      [name],
    )) as { rows: Array<{ key: string; body: string; seq: string; txid: string }> };
    const lastByKey = new Map<string, { seq: bigint; txid: bigint }>();
    for (const row of rows.rows) {
      const seq = BigInt(row.seq);
      const txid = BigInt(row.txid);
      const last = lastByKey.get(row.key);
      if (last) {
        expect(txid >= last.txid).toBe(true);
        if (mode === 'message') expect(seq > last.seq).toBe(true);
      }
      lastByKey.set(row.key, { seq, txid });
    }
  });

  it('dead-letters a record that throws on a declared first delivery after maxAttempts attempts', async () => {
    const topic = unique('declared');
    const dlq = `${topic}.dlq`;
    const groupId = unique('g');
    const name = unique('c');
    await createTopics(admin, [topic, dlq], 1);
    // Two chunks of 3 before the poison: the first is counted, then committed, so the
    // poison's first delivery is declared a first delivery (no counting write).
    const values = ['a', 'b', 'c', 'd', 'e', 'f', 'poison', 'g', 'h'];
    await produce(
      producer,
      topic,
      values.map((v) => ({ value: v, headers: { 'message-id': `${name}-${v}` } })),
    );
    const calls: string[] = [];
    const outcomes: InboxOutcome[] = [];
    const effect = recordEffect(name);
    await start(
      testConsumer(topic, groupId, {
        mode,
        batchSize: 3,
        inbox: poisonInbox(name),
        handler: async (ctx) => {
          if (ctx.payload === 'poison') {
            const call = `${ctx.attempt}:${ctx.message.delivery.redelivered === false}`;
            // Batch mode calls a failing handler twice per attempt (optimistic, then isolated).
            if (calls.at(-1) !== call) calls.push(call);
            throw new Error('cannot digest this');
          }
          await effect(ctx);
        },
        onSettled: ({ outcome }) => void (outcome && outcomes.push(outcome)),
      }),
    );

    const [letter] = await readTopic(kafka, dlq, 1);
    expect(letter?.headers[DEAD_LETTER_HEADERS.reason]).toBe('MAX_ATTEMPTS');
    expect(letter?.headers[DEAD_LETTER_HEADERS.attempts]).toBe('3');
    await waitFor('all offsets committed', () => fullyCommitted(groupId, topic), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    // Declared once, then counted: attempt numbers 1, 2, 3 — no jump, no extra attempt.
    expect(calls).toEqual(['1:true', '2:false', '3:false']);
    const poison = outcomes.filter((o) => o.messageId === `${name}-poison`);
    expect(poison.map((o) => [o.status, 'attempt' in o ? o.attempt : undefined])).toEqual([
      ['failed', 1],
      ['failed', 2],
      ['dead-lettered', 3],
    ]);
    const counts = await store.effectCounts();
    const mine = [...counts].filter(([id]) => id.startsWith(`${name}-`));
    expect(mine).toHaveLength(values.length - 1);
    expect(mine.every(([, n]) => n === 1)).toBe(true);
    // No attempt counter is left behind.
    const left = (await store.knex.raw(
      `select count(*)::int as n from ${store.names.table('inbox_attempts')} where consumer = ?`,
      [name],
    )) as { rows: Array<{ n: number }> };
    expect(left.rows[0]!.n).toBe(0);
  });
});

describe('createKafkaConsumer in message mode', () => {
  it('holds back the records behind a failing one in its partition until it succeeds', async () => {
    const { topic, groupId, name } = await topicWith('retry', ['a', 'flaky', 'b', 'c']);
    let flakyCalls = 0;
    const effect = recordEffect(name);
    await start(
      testConsumer(topic, groupId, {
        mode: 'message',
        inbox: createInbox({
          store,
          consumer: name,
          maxAttempts: 5,
          backoff: { baseMs: 100, capMs: 200 },
          decode: (body) => Buffer.from(body).toString(),
        }),
        handler: async (ctx) => {
          if (ctx.payload === 'flaky' && ++flakyCalls < 3) throw new Error('not yet');
          await effect(ctx);
        },
      }),
    );

    await waitFor('all offsets committed', () => fullyCommitted(groupId, topic), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    expect(flakyCalls).toBe(3);
    const rows = (await store.knex.raw(
      `select body from ${store.effectsTable} where consumer = ? order by seq`,
      [name],
    )) as { rows: Array<{ body: string }> };
    // Nothing after the failing record runs before it succeeds: its partition is paused and
    // sought back to it. (In batch mode the records after it in the same transaction commit
    // first, so the order is only a message-mode promise.)
    expect(rows.rows.map((r) => r.body)).toEqual(['a', 'flaky', 'b', 'c']);
  });
});

describe('createKafkaConsumer dead letters', () => {
  it("writes a poison record to its named dead-letter topic with key, value, original headers and core's headers", async () => {
    const topic = unique('poison');
    // A name of its own: the default `<topic>.dlq` is what the other tests read.
    const dlq = unique('poison-dlq');
    const groupId = unique('g');
    const name = unique('c');
    await createTopics(admin, [topic, dlq], 1);
    await produce(producer, topic, [
      { key: 'k', value: 'ok-1', headers: { 'message-id': `${name}-1` } },
      { key: 'k', value: 'poison', headers: { 'message-id': `${name}-2`, traceparent: 'tp-1' } },
      { key: 'k', value: 'ok-2', headers: { 'message-id': `${name}-3` } },
    ]);
    const effect = recordEffect(name);
    await start(
      testConsumer(topic, groupId, {
        deadLetter: { topic: dlq },
        inbox: poisonInbox(name),
        handler: async (ctx) => {
          if (ctx.payload === 'poison') throw new Error('cannot digest this');
          await effect(ctx);
        },
      }),
    );

    const [letter] = await readTopic(kafka, dlq, 1);
    expect(letter).toMatchObject({
      key: 'k',
      value: 'poison',
      headers: {
        'message-id': `${name}-2`,
        traceparent: 'tp-1',
        [DEAD_LETTER_HEADERS.reason]: 'MAX_ATTEMPTS',
        [DEAD_LETTER_HEADERS.attempts]: '3',
        [DEAD_LETTER_HEADERS.messageId]: `${name}-2`,
        [DEAD_LETTER_HEADERS.scope]: 'default',
        [DEAD_LETTER_HEADERS.source]: topic,
        [DEAD_LETTER_HEADERS.consumer]: name,
        // Where it was: the second record of partition 0.
        [DEAD_LETTER_POSITION_HEADERS.partition]: '0',
        [DEAD_LETTER_POSITION_HEADERS.offset]: '1',
      },
    });
    expect(letter!.headers[DEAD_LETTER_HEADERS.error]).toContain('cannot digest this');
    expect(letter!.headers[DEAD_LETTER_HEADERS.deadLetterId]).toMatch(/^\d+$/);
    expect(new Date(letter!.headers[DEAD_LETTER_HEADERS.at]!).getTime()).not.toBeNaN();
    // Exactly core's dead-letter headers beside the original ones: no Kafka-only names.
    const shared: string[] = [
      ...Object.values(DEAD_LETTER_HEADERS),
      ...Object.values(DEAD_LETTER_POSITION_HEADERS),
    ];
    expect(
      Object.keys(letter!.headers).filter((h) => h.startsWith('x-') && !shared.includes(h)),
    ).toEqual([]);
    // The poison record's offset is committed with the partition's: it does not come back.
    await waitFor('all offsets committed', () => fullyCommitted(groupId, topic), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
  });

  it('uses topic/partition/offset as the id when the record has none and the fallback is on', async () => {
    const topic = unique('noid');
    const groupId = unique('g');
    const name = unique('c');
    await createTopics(admin, [topic], 1);
    await produce(producer, topic, [{ value: 'x' }]);
    await start(
      testConsumer(topic, groupId, {
        inbox: createInbox({ store, consumer: name }),
        handler: recordEffect(name),
      }),
    );
    await waitFor('all offsets committed', () => fullyCommitted(groupId, topic), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    const counts = await store.effectCounts();
    expect(counts.get(`${topic}/0/0`)).toBe(1);
  });
});

describe('createKafkaConsumer stopping and dead-letter outages', () => {
  it('stops in the middle of a batch with exactly the finished records committed', async () => {
    const { topic, groupId, name } = await topicWith('stop', numbers(60));
    const effect = recordEffect(name);
    let handled = 0;
    const first = testConsumer(topic, groupId, {
      mode: 'message',
      batchSize: 7,
      inbox: createInbox({ store, consumer: name }),
      handler: async (ctx) => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        await effect(ctx);
        handled++;
      },
    });
    await start(first);
    await waitFor('20 records handled', () => handled >= 20, {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    await first.stop();
    const done = [...(await store.effectCounts()).keys()].filter((id) =>
      id.startsWith(`${name}-`),
    ).length;
    expect(done).toBeLessThan(60);
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    // Everything that took effect is committed, and nothing beyond it.
    expect(committed!.partitions[0]!.offset).toBe(String(done));

    await start(
      testConsumer(topic, groupId, {
        fromBeginning: false,
        inbox: createInbox({ store, consumer: name }),
        handler: effect,
      }),
    );
    await waitFor('all offsets committed', () => fullyCommitted(groupId, topic), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    const counts = await store.effectCounts();
    const mine = [...counts].filter(([id]) => id.startsWith(`${name}-`));
    expect(mine).toHaveLength(60);
    expect(mine.every(([, n]) => n === 1)).toBe(true);
  });

  it.each([
    ['stop({ drain: false })', { drain: false }],
    ['stop({ timeoutMs }), draining handlers that wait for their signal,', { timeoutMs: 300 }],
  ])(
    '%s aborts the handlers, commits nothing more and gives the records back',
    async (_, stopOptions) => {
      const { topic, groupId, name } = await topicWith('nodrain', numbers(5));
      const events: Array<SettledEvent<void, KafkaDelivery>> = [];
      let started = 0;
      const stuck = testConsumer<void>(topic, groupId, {
        batchSize: 10,
        inbox: createInbox({ store, consumer: name }),
        // Never ends on its own: only the aborted signal gets the consumer out of it.
        handler: (ctx) => {
          started++;
          return new Promise<void>((_, reject) => {
            if (ctx.signal.aborted) reject(new Error('aborted'));
            ctx.signal.addEventListener('abort', () => reject(new Error('aborted')), {
              once: true,
            });
          });
        },
        onSettled: (event) => events.push(event),
      });
      await start(stuck);
      await waitFor('the handler to run', () => started > 0, { timeoutMs: 30_000, intervalMs: 50 });
      const stopping = Date.now();
      await stuck.stop(stopOptions);
      expect(Date.now() - stopping).toBeLessThan(10_000);
      expect(stuck.running).toBe(false);
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      expect(committed!.partitions[0]!.offset).toBe('-1');
      expect(events.length).toBeGreaterThan(0);
      expect(events.map((e) => e.action)).toEqual(events.map(() => 'released'));

      // The records come back to the next member and take effect once each.
      await start(
        testConsumer(topic, groupId, {
          inbox: createInbox({ store, consumer: name }),
          handler: recordEffect(name),
        }),
      );
      await waitFor('all offsets committed', () => fullyCommitted(groupId, topic), {
        timeoutMs: 30_000,
        intervalMs: 100,
      });
      const counts = await store.effectCounts();
      expect(Array.from({ length: 5 }, (_, i) => counts.get(`${name}-${i}`))).toEqual([
        1, 1, 1, 1, 1,
      ]);
    },
  );

  it('stop({ drain: false }) does not wait for a handler that ignores its signal', async () => {
    const { topic, groupId, name } = await topicWith('deaf', numbers(3));
    const events: Array<SettledEvent<void, KafkaDelivery>> = [];
    let started = 0;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const write = recordEffect(name);
    const deaf = testConsumer<void>(topic, groupId, {
      batchSize: 10,
      inbox: createInbox({ store, consumer: name }),
      // Takes no notice of ctx.signal: goes on until the test lets it, then writes its effect.
      handler: async (ctx) => {
        started++;
        await released;
        await write(ctx);
      },
      onSettled: (event) => events.push(event),
    });
    await start(deaf);
    let reported: number;
    try {
      await waitFor('the handler to run', () => started > 0, { timeoutMs: 30_000, intervalMs: 50 });
      const stopping = Date.now();
      await deaf.stop({ drain: false });
      expect(Date.now() - stopping).toBeLessThan(10_000);
      expect(events.length).toBeGreaterThan(0);
      expect(events.map((e) => e.action)).toEqual(events.map(() => 'released'));
      reported = events.length;
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      expect(committed!.partitions[0]!.offset).toBe('-1');
    } finally {
      // The handler ends after the stop: nothing more is reported or committed for it, and
      // its record, delivered again, takes effect once in all.
      release();
    }
    await start(
      testConsumer(topic, groupId, {
        inbox: createInbox({ store, consumer: name }),
        handler: write,
      }),
    );
    await waitFor('all offsets committed', () => fullyCommitted(groupId, topic), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    expect(events).toHaveLength(reported);
    const counts = await store.effectCounts();
    expect(Array.from({ length: 3 }, (_, i) => counts.get(`${name}-${i}`))).toEqual([1, 1, 1]);
  });

  it('stopped while starting: start rejects and no member stays in the group', async () => {
    const topic = unique('early');
    const groupId = unique('g');
    await createTopics(admin, [topic], 1);
    const consumer = testConsumer(topic, groupId, {
      fromBeginning: false,
      inbox: createInbox({ store, consumer: unique('c') }),
      handler: async () => undefined,
    });
    const starting = consumer.start();
    await consumer.stop();
    await expect(starting).rejects.toMatchObject({ code: 'CONSUMER_STATE' });
    const { groups } = await admin.describeGroups([groupId]);
    expect(groups[0]?.members ?? []).toHaveLength(0);
  });

  it('keeps a dead letter uncommitted until the dead-letter topic takes it', async () => {
    const topic = unique('dlq-down');
    const dlq = unique('dlq-up');
    const groupId = unique('g');
    const name = unique('c');
    await createTopics(admin, [topic, dlq], 1);
    await produce(producer, topic, [
      { value: 'not json', headers: { 'message-id': `${name}-1` } },
      { value: '{"ok":true}', headers: { 'message-id': `${name}-2` } },
    ]);
    let asked = 0;
    const outcomes: InboxOutcome[] = [];
    await start(
      testConsumer(topic, groupId, {
        // The first two forwards go to a topic name the broker refuses.
        deadLetter: { topic: () => (++asked <= 2 ? 'not a topic!' : dlq) },
        inbox: createInbox({
          store,
          consumer: name,
          decode: (body) => JSON.parse(Buffer.from(body).toString()) as unknown,
        }),
        handler: recordEffect(name),
        onSettled: ({ outcome }) => void (outcome && outcomes.push(outcome)),
      }),
    );
    const [letter] = await readTopic(kafka, dlq, 1);
    expect(letter?.headers[DEAD_LETTER_HEADERS.reason]).toBe('UNDECODABLE_BODY');
    await waitFor('all offsets committed', () => fullyCommitted(groupId, topic), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    expect(asked).toBe(3);
    // The record came back after each refused forward. The one behind it had committed in
    // the same batch transaction, so it came back too and was recognised as a duplicate.
    const statuses = (id: string): string[] =>
      outcomes.filter((o) => o.messageId === id).map((o) => o.status);
    expect(statuses(`${name}-1`)).toEqual(['dead-lettered', 'dead-lettered', 'dead-lettered']);
    expect(statuses(`${name}-2`)).toEqual(['processed', 'duplicate', 'duplicate']);
    expect((await store.effectCounts()).get(`${name}-2`)).toBe(1);
  });
});

describe('createKafkaConsumer heartbeats', () => {
  it('keeps its membership through a batch longer than the session timeout', async () => {
    const { topic, groupId, name } = await topicWith('slow', numbers(40));
    const outcomes: InboxOutcome[] = [];
    const effect = recordEffect(name);
    await start(
      testConsumer(topic, groupId, {
        mode: 'message',
        batchSize: 1000,
        inbox: createInbox({ store, consumer: name }),
        handler: async (ctx) => {
          await new Promise((resolve) => setTimeout(resolve, 200));
          await effect(ctx);
        },
        onSettled: ({ outcome }) => void (outcome && outcomes.push(outcome)),
      }),
    );
    // 40 × 200 ms = 8 s in one batch, beyond the 6 s session timeout: without heartbeats
    // the member would be evicted and the batch delivered again (as duplicates).
    await waitFor('all offsets committed', () => fullyCommitted(groupId, topic), {
      timeoutMs: 40_000,
      intervalMs: 100,
    });
    expect(outcomes.filter((o) => o.status === 'processed')).toHaveLength(40);
    expect(outcomes.filter((o) => o.status !== 'processed')).toHaveLength(0);
  });
});

describe('createKafkaConsumer in batch mode, one bad record in a chunk', () => {
  /** Eight records in one chunk, the bad one at offset 5, each with an id of its own. */
  async function chunkWithBadRecord(label: string) {
    const topic = unique(label);
    const dlq = `${topic}.dlq`;
    const groupId = unique('g');
    const name = unique('c');
    await createTopics(admin, [topic, dlq], 1);
    const values = ['0', '1', '2', '3', '4', 'bad', '6', '7'];
    await produce(
      producer,
      topic,
      values.map((v) => ({ value: v, headers: { 'message-id': `${name}-${v}` } })),
    );
    return { topic, dlq, groupId, name, values, badId: `${name}-bad` };
  }

  /**
   * After the loop: exactly the bad record is dead-lettered, in the dead-letter topic and in
   * the store; every other record took effect once; no attempt counter is left.
   */
  async function expectOnlyBadDeadLettered(run: {
    topic: string;
    dlq: string;
    groupId: string;
    name: string;
    values: string[];
    badId: string;
  }): Promise<void> {
    const [letter] = await readTopic(kafka, run.dlq, 1);
    expect(letter?.value).toBe('bad');
    expect(letter?.headers[DEAD_LETTER_HEADERS.reason]).toBe('MAX_ATTEMPTS');
    await waitFor('all offsets committed', () => fullyCommitted(run.groupId, run.topic), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    const [end] = await admin.fetchTopicOffsets(run.dlq);
    expect(end!.high).toBe('1');
    const letters = await createDeadLetters(store).list({ consumer: run.name });
    expect(letters.map((l) => [l.messageId, l.reason])).toEqual([[run.badId, 'MAX_ATTEMPTS']]);
    const counts = await store.effectCounts();
    const mine = [...counts].filter(([id]) => id.startsWith(`${run.name}-`));
    expect(mine.map(([id]) => id).sort()).toEqual(
      run.values
        .filter((v) => v !== 'bad')
        .map((v) => `${run.name}-${v}`)
        .sort(),
    );
    expect(mine.every(([, n]) => n === 1)).toBe(true);
    const left = (await store.knex.raw(
      `select count(*)::int as n from ${store.names.table('inbox_attempts')} where consumer = ?`,
      [run.name],
    )) as { rows: Array<{ n: number }> };
    expect(left.rows[0]!.n).toBe(0);
  }

  it('whose handler throws every time: only that record is dead-lettered', async () => {
    const run = await chunkWithBadRecord('chunk-throw');
    const effect = recordEffect(run.name);
    await start(
      testConsumer(run.topic, run.groupId, {
        mode: 'batch',
        batchSize: 8,
        inbox: poisonInbox(run.name),
        handler: async (ctx) => {
          if (ctx.payload === 'bad') throw new Error('cannot digest this');
          await effect(ctx);
        },
      }),
    );
    await expectOnlyBadDeadLettered(run);
  });

  it('that fails the inbox call as a whole every time: the chunk is narrowed down to it', async () => {
    const run = await chunkWithBadRecord('chunk-whole');
    const effect = recordEffect(run.name);
    const narrowed: unknown[] = [];
    await start(
      testConsumer(run.topic, run.groupId, {
        mode: 'batch',
        batchSize: 8,
        inbox: createInbox({
          store,
          consumer: run.name,
          maxAttempts: 3,
          backoff: { baseMs: 50, capMs: 100 },
          decode: (body) => Buffer.from(body).toString(),
          // A fault past the handler, inside the transaction: the whole call throws (as when
          // a record breaks the connection or a statement the inbox itself runs).
          onStep: (step, messageId) => {
            if (step === 'handler-done' && messageId === run.badId) {
              throw new Error('the transaction broke');
            }
          },
        }),
        handler: effect,
        logger: {
          debug: () => undefined,
          info: () => undefined,
          warn: (message, fields) => {
            if (message.includes('smaller chunks')) narrowed.push(fields?.chunkSize);
          },
          error: () => undefined,
        },
      }),
    );
    await expectOnlyBadDeadLettered(run);
    // Halved down to the bad record alone (8 → 4 → 2 → 1 when the chunk came as one fetch):
    // the records before it committed in smaller chunks.
    expect(narrowed.at(-1)).toBe(1);
    expect(narrowed).toEqual([...narrowed].sort((a, b) => Number(b) - Number(a)));
  });
});
