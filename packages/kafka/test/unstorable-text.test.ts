import type { Admin, Kafka, Producer } from 'kafkajs';
import { createDeadLetters, createInbox, type InboxOutcome } from '@justonce/core';
import { createKafkaConsumer, DEAD_LETTER_HEADERS, type KafkaConsumer } from '../src';
import {
  FAST_GROUP,
  createTopics,
  openEffectsStore,
  readTopic,
  unique,
  connectKafkaClients,
  type KafkaClients,
} from './support';
import { waitFor } from '../../../test-support/wait-for';

/**
 * Records whose id, tenant or headers hold text PostgreSQL cannot store exactly (U+0000,
 * invalid UTF-8), against the real broker: each is dead-lettered with its reason, committed,
 * and the consumer goes on. Before, such an id reached SQL and failed the record's whole
 * chunk on every delivery (22021), so the partition never moved again.
 */

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

/** What is sent at each offset, and the reason it must be dead-lettered with (if any). */
function records(name: string): Array<{
  headers: Record<string, string | Buffer>;
  value: string;
  reason?: string;
}> {
  const id = (n: number): string => `${name}-${n}`;
  return [
    { value: 'ok-0', headers: { 'message-id': id(0) } },
    { value: 'nul-id', headers: { 'message-id': `${id(1)}\u0000b` }, reason: 'INVALID_MESSAGE_ID' },
    { value: 'ok-2', headers: { 'message-id': id(2) } },
    {
      value: 'nul-tenant',
      headers: { 'message-id': id(3), tenant: 'acme\u0000' },
      reason: 'INVALID_SCOPE',
    },
    {
      value: 'bad-utf8-header',
      headers: { 'message-id': id(4), note: Buffer.from([0x6e, 0xff, 0xfe]) },
      reason: 'INVALID_HEADERS',
    },
    {
      value: 'bad-utf8-id',
      headers: { 'message-id': Buffer.concat([Buffer.from(id(5)), Buffer.of(0xc0, 0x80)]) },
      reason: 'INVALID_MESSAGE_ID',
    },
    {
      value: 'nul-header-name',
      headers: { 'message-id': id(6), 'x\u0000y': 'v' },
      reason: 'INVALID_HEADERS',
    },
    {
      value: 'nul-header-value',
      headers: { 'message-id': id(7), traceparent: 'a\u0000b' },
      reason: 'INVALID_HEADERS',
    },
    { value: 'ok-8', headers: { 'message-id': id(8) } },
  ];
}

describe.each(['batch', 'message'] as const)(
  'createKafkaConsumer in %s mode, with U+0000 or invalid UTF-8 in a record',
  (mode) => {
    it('dead-letters each such record with its reason, commits it and goes on', async () => {
      const topic = unique('nul');
      const dlq = `${topic}.dlq`;
      const groupId = unique('g');
      const name = unique('c');
      await createTopics(admin, [topic, dlq], 1);
      const sent = records(name);
      await producer.send({
        topic,
        acks: -1,
        messages: sent.map(({ value, headers }) => ({ value, headers })),
      });
      const bad = sent.flatMap((r, offset) => (r.reason ? [{ ...r, offset }] : []));

      const outcomes: InboxOutcome[] = [];
      const consumer = createKafkaConsumer({
        kafka,
        groupId,
        topics: [topic],
        fromBeginning: true,
        consumerConfig: FAST_GROUP,
        mode,
        batchSize: 4,
        inbox: createInbox({ store, consumer: name }),
        handler: async (ctx) => {
          await ctx.trx.raw(
            `insert into ${store.effectsTable} (message_id, body, consumer) values (?, ?, ?)`,
            [ctx.messageId, Buffer.from(ctx.message.body).toString(), name],
          );
        },
        onSettled: ({ outcome }) => void (outcome && outcomes.push(outcome)),
      });
      running.push(consumer);
      await consumer.start();

      const letters = await readTopic(kafka, dlq, bad.length);
      // Each dead letter is the record with the same value (the values are distinct).
      const byValue = new Map(letters.map((l) => [l.value, l]));
      for (const r of bad) {
        const letter = byValue.get(r.value);
        expect([r.value, letter?.value, letter?.headers[DEAD_LETTER_HEADERS.reason]]).toEqual([
          r.value,
          r.value,
          r.reason,
        ]);
        expect(letter?.headers[DEAD_LETTER_HEADERS.deadLetterId]).toMatch(/^\d+$/);
      }
      await waitFor(
        'every offset committed',
        async () => {
          const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
          return committed!.partitions[0]!.offset === String(sent.length);
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );

      // Each bad record once in the dead-letter topic and once in the store, nothing else.
      const [end] = await admin.fetchTopicOffsets(dlq);
      expect(end!.high).toBe(String(bad.length));
      const stored = await createDeadLetters(store).list({ consumer: name });
      expect(
        stored
          .map((l) => [l.delivery.offset, l.reason])
          .sort((a, b) => Number(a[0]) - Number(b[0])),
      ).toEqual(bad.map((r) => [String(r.offset), r.reason]));
      // The good records before, between and after them took effect once each.
      const counts = await store.effectCounts();
      const mine = [...counts].filter(([id]) => id.startsWith(`${name}-`));
      expect(mine.map(([id]) => id).sort()).toEqual([0, 2, 8].map((n) => `${name}-${n}`));
      expect(mine.every(([, n]) => n === 1)).toBe(true);
      expect(outcomes.filter((o) => o.status === 'processed')).toHaveLength(3);
    });
  },
);
