import type { Admin, Kafka } from 'kafkajs';
import {
  createOutbox,
  createRelay,
  type Logger,
  type OutgoingMessage,
  type Publisher,
  type PublishResult,
} from '@justonce/core';
import { createKafkaPublisher, type KafkaClient, type KafkaPublisher } from '../src';
import { openTestStore } from '../../core/test/db';
import { FAST_GROUP, createTopics, testKafka, unique } from './support';
import { waitFor } from '../../../test-support/wait-for';

let kafka: Kafka;
let admin: Admin;
const cleanup: Array<() => Promise<void>> = [];

beforeAll(async () => {
  kafka = testKafka();
  admin = kafka.admin();
  await admin.connect();
});

afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined);
});

afterAll(async () => {
  await admin.disconnect();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A logger that keeps its warnings. */
function recordingLogger(): Logger & { warnings: Array<{ message: string; fields?: object }> } {
  const warnings: Array<{ message: string; fields?: object }> = [];
  const none = (): void => undefined;
  return {
    warnings,
    debug: none,
    info: none,
    error: none,
    warn: (message, fields) => warnings.push({ message, fields }),
  };
}

const rebuilds = (logger: ReturnType<typeof recordingLogger>): number =>
  logger.warnings.filter((w) => /rebuil/i.test(w.message)).length;

/** Creates a topic and removes it after the test. */
async function topicOf(partitions: number): Promise<string> {
  const topic = unique('recover');
  await createTopics(admin, [topic], partitions);
  cleanup.push(() => admin.deleteTopics({ topics: [topic] }));
  return topic;
}

async function partitionCount(topic: string): Promise<number> {
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    return topics[0]?.partitions.length ?? 0;
  } catch {
    return 0;
  }
}

/**
 * Deletes the topic and creates it again with `partitions` partitions, waiting until the
 * metadata shows the new layout. A relay publishing meanwhile may auto-create the topic in
 * the gap (with the broker's default partitions); then it is deleted again. Resolves to the
 * time the successful creation was requested: the old topic was gone by then.
 */
async function recreateTopic(topic: string, partitions: number): Promise<number> {
  let createdAt = 0;
  for (let round = 0; round < 20; round++) {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await waitFor(`${topic} deleted`, async () => !(await admin.listTopics()).includes(topic), {
      timeoutMs: 15_000,
      intervalMs: 50,
    });
    createdAt = Date.now();
    const created = await admin
      .createTopics({
        waitForLeaders: true,
        topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
      })
      .catch(() => false);
    if (created && (await partitionCount(topic)) === partitions) break;
  }
  await waitFor(
    `${topic} with ${partitions} partitions`,
    async () => (await partitionCount(topic)) === partitions,
    { timeoutMs: 15_000, intervalMs: 50 },
  );
  return createdAt;
}

const message = (topic: string, messageId: string, key: string): OutgoingMessage => ({
  messageId,
  destination: topic,
  key,
  headers: {},
  payload: new TextEncoder().encode(messageId),
});

/** Reads `topic` from the beginning until every id of `expected` was seen (bounded). */
async function idsOnTopic(topic: string, expected: ReadonlySet<string>): Promise<Set<string>> {
  const seen = new Set<string>();
  const consumer = kafka.consumer({ groupId: unique('reader'), ...FAST_GROUP });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const id = message.headers?.['message-id'];
        if (id !== undefined) seen.add(String(id));
      },
    });
    await waitFor(
      `every expected id on ${topic}`,
      () => [...expected].every((id) => seen.has(id)),
      { timeoutMs: 20_000, intervalMs: 100 },
    ).catch(() => undefined);
    return seen;
  } finally {
    await consumer.disconnect();
  }
}

const batch = (topic: string, label: string, size = 30): OutgoingMessage[] =>
  Array.from({ length: size }, (_, i) => message(topic, `${label}-${i}`, `key-${i}`));

describe('the Kafka publisher after its producer state broke', () => {
  it('recovers once a topic is re-created with fewer partitions under it', async () => {
    const logger = recordingLogger();
    const topic = await topicOf(3);
    const publisher: KafkaPublisher = createKafkaPublisher({ kafka, retries: 2, logger });
    cleanup.push(() => publisher.close());

    for (const round of ['a', 'b']) {
      const results = await publisher.publish(batch(topic, round));
      expect(results.every((r) => r.ok)).toBe(true);
    }

    await recreateTopic(topic, 1);

    const outcomes: PublishResult[][] = [];
    for (let call = 0; call < 10; call++) {
      const results = await publisher.publish(batch(topic, `after-${call}`));
      outcomes.push(results);
      for (const r of results) {
        if (!r.ok) expect(r.retriable).toBe(true);
      }
      if (outcomes.length >= 3 && outcomes.slice(-3).every((rs) => rs.every((r) => r.ok))) break;
      await sleep(100);
    }
    const summary = outcomes.map((rs) =>
      rs.every((r) => r.ok)
        ? 'ok'
        : rs.find((r): r is Extract<PublishResult, { ok: false }> => !r.ok)!.error.message,
    );
    // Once a call succeeds, every later one does too, and the last three did.
    const firstOk = summary.indexOf('ok');
    expect(summary).toContain('ok');
    expect(summary.slice(firstOk)).toEqual(summary.slice(firstOk).map(() => 'ok'));
    expect(summary.slice(-3)).toEqual(['ok', 'ok', 'ok']);
    expect(rebuilds(logger)).toBeGreaterThanOrEqual(1);
    expect(logger.warnings[0]!.fields).toMatchObject({
      reason: expect.stringMatching(/SEQUENCE|PRODUCER/),
      topic,
      generation: 2,
    });

    const written = new Set(
      outcomes.flatMap((rs) => rs.filter((r) => r.ok).map((r) => r.messageId)),
    );
    const seen = await idsOnTopic(topic, written);
    expect([...written].filter((id) => !seen.has(id))).toEqual([]);
  });

  it('lets a running relay publish every event, none dead, across the re-creation', async () => {
    const maxAttempts = 10;
    const logger = recordingLogger();
    const topic = await topicOf(3);
    const store = await openTestStore('postgres');
    cleanup.push(() => store.dispose());
    // No auto-creation: while the topic is gone, nothing lands in a stray topic of that name,
    // so every event acknowledged after the re-creation must be on the new topic.
    const client: KafkaClient = {
      consumer: (config) => kafka.consumer(config),
      producer: (config) => kafka.producer({ ...config, allowAutoTopicCreation: false }),
    };
    const inner = createKafkaPublisher({ kafka: client, retries: 2, logger });
    cleanup.push(() => inner.close());
    // When each message was first acknowledged, to tell the old topic's from the new one's.
    const firstOk = new Map<string, number>();
    // Publish calls wait here while the topic is re-created, as on a stalled broker, so the
    // producer meets the new topic with the old metadata (three partitions): kafkajs writes
    // part of a request, rolls its sequences back and breaks, every time.
    let gate: Promise<void> | undefined;
    let inFlight = 0;
    const publisher: Publisher = {
      async publish(messages) {
        while (gate) await gate;
        inFlight++;
        try {
          const results = await inner.publish(messages);
          const now = Date.now();
          for (const r of results) {
            if (r.ok && !firstOk.has(r.messageId)) firstOk.set(r.messageId, now);
          }
          return results;
        } finally {
          inFlight--;
        }
      },
      close: () => inner.close(),
    };
    const relay = createRelay({
      store,
      publisher,
      concurrency: 3,
      batchSize: 25,
      maxAttempts,
      pollIntervalMs: 50,
      backoff: { baseMs: 20, capMs: 200 },
      onPublished: 'keep',
    });
    cleanup.push(() => relay.stop({ timeoutMs: 5_000 }));

    const outbox = createOutbox({ store });
    const ids: string[] = [];
    let added = 0;
    const add = async (count: number): Promise<void> => {
      await store.knex.transaction(async (trx) => {
        const events = Array.from({ length: count }, () => {
          const n = added++;
          return { destination: topic, key: `key-${n % 20}`, payload: { n } };
        });
        ids.push(...(await outbox.add(trx, events)));
      });
    };

    await add(150);
    await relay.start();
    await waitFor('the relay publishing', () => firstOk.size >= 50, { timeoutMs: 20_000 });

    // Keep adding while the topic is deleted and created again with one partition.
    let adding = true;
    const adder = (async () => {
      while (adding) {
        await add(10);
        await sleep(40);
      }
    })();
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    await waitFor('no publish in flight', () => inFlight === 0, { timeoutMs: 10_000 });
    const recreatedAt = await recreateTopic(topic, 1);
    gate = undefined;
    open();
    await sleep(1_000);
    adding = false;
    await adder;
    await add(20);

    await waitFor(
      'an empty outbox',
      async () => {
        const stats = await relay.stats();
        return stats.pending === 0 && firstOk.size >= ids.length;
      },
      { timeoutMs: 40_000, intervalMs: 100 },
    );
    const outboxTable = store.names.table('outbox');
    const {
      rows: [row],
    } = (await store.knex.raw(
      `select count(*) filter (where status = 'dead')::int as dead,
              count(*) filter (where status = 'published')::int as published,
              max(attempts)::int as attempts
         from ${outboxTable}`,
    )) as { rows: Array<{ dead: number; published: number; attempts: number }> };
    expect(row).toMatchObject({ dead: 0, published: ids.length });
    expect(row!.attempts).toBeLessThan(maxAttempts);
    expect((await relay.stats()).markedDead).toBe(0);
    expect([...ids].filter((id) => !firstOk.has(id))).toEqual([]);

    // What was acknowledged after the re-creation is on the new topic; what was acknowledged
    // before went to the deleted one.
    const afterwards = new Set(ids.filter((id) => firstOk.get(id)! > recreatedAt));
    expect(afterwards.size).toBeGreaterThanOrEqual(20);
    // Before sends went one at a time, a send that started while kafkajs rolled back the
    // sequence numbers of a partly written request was acknowledged as their duplicate
    // without being written: ids acknowledged here were missing from the topic. Whether the
    // producer is rebuilt on the way depends on how the requests fall; the first test of
    // this file checks the rebuild.
    const seen = await idsOnTopic(topic, afterwards);
    expect([...afterwards].filter((id) => !seen.has(id))).toEqual([]);
  });
});
