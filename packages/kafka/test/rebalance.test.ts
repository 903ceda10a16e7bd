import type { Admin, Kafka, Producer } from 'kafkajs';
import { createInbox, type InboxOutcome } from '@justonce/core';
import { createKafkaConsumer, type KafkaConsumer } from '../src';
import {
  CLIENTS,
  FAST_GROUP,
  clientUnderTest,
  createTopics,
  openEffectsStore,
  produce,
  unique,
  connectKafkaClients,
  type KafkaClients,
} from './support';
import { waitFor } from '../../../test-support/wait-for';

let kafka: Kafka;
let admin: Admin;
let producer: Producer;
let clients: KafkaClients;
let store: Awaited<ReturnType<typeof openEffectsStore>>;
const consumers: KafkaConsumer[] = [];

beforeAll(async () => {
  clients = await connectKafkaClients();
  ({ kafka, admin, producer } = clients);
  store = await openEffectsStore();
});

afterAll(async () => {
  await Promise.all(consumers.map((c) => c.stop()));
  await clients.close();
  await store.dispose();
});

/** Both modes with each inbox dedup mode, but `watermark+ids` in batch mode only. */
const RUNS = [
  ['batch', 'ids'],
  ['message', 'ids'],
  ['batch', 'watermark'],
  ['message', 'watermark'],
  ['batch', 'watermark+ids'],
] as const;

/**
 * kafkajs only for now: on @platformatic/kafka the `ids` runs pass, but in the watermark
 * modes some runs left records never handled after the hand-overs (the README's "Choosing
 * the client" says so).
 */
const REBALANCE_CLIENTS = CLIENTS.filter((client) => client === 'kafkajs');

describe.each(REBALANCE_CLIENTS)(
  'two consumers on %s in one group while members join and leave',
  (client) => {
    it.each(RUNS)(
      'in %s mode with dedup %s, every message flowing through the rebalances has exactly one effect',
      async (mode, dedup) => {
        const topic = unique('rebal');
        const groupId = unique('g');
        const name = unique('c');
        await createTopics(admin, [topic], 4);
        const outcomes: InboxOutcome[] = [];
        const member = (label: string): KafkaConsumer => {
          const consumer = createKafkaConsumer({
            kafka: clientUnderTest(client, { kafka }),
            groupId,
            topics: [topic],
            fromBeginning: true,
            mode,
            batchSize: 10,
            concurrency: 2,
            consumerConfig: FAST_GROUP,
            inbox: createInbox({ store, consumer: name, dedup }),
            dedup,
            handler: async (ctx) => {
              // Slow enough that rebalances land in the middle of batches.
              await new Promise((resolve) => setTimeout(resolve, 2));
              await ctx.trx.raw(
                `insert into ${store.effectsTable} (message_id, key, consumer) values (?, ?, ?)`,
                [ctx.messageId, ctx.message.key ?? null, label],
              );
            },
            onSettled: ({ outcome }) => void (outcome && outcomes.push(outcome)),
          });
          consumers.push(consumer);
          return consumer;
        };

        // Messages keep flowing (about 50 a second) through every change of membership.
        let produced = 0;
        let producing = true;
        const flow = (async () => {
          while (producing) {
            const batch = Array.from({ length: 5 }, (_, i) => {
              const n = produced + i;
              return {
                key: `k${n % 16}`,
                value: String(n),
                headers: { 'message-id': `${name}-${n}` },
              };
            });
            await produce(producer, topic, batch);
            produced += batch.length;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        })();

        const byMember = async (): Promise<Map<string, number>> => {
          const result = (await store.knex.raw(
            `select consumer, count(*)::int as n from ${store.effectsTable} where message_id like ? group by consumer`,
            [`${name}-%`],
          )) as { rows: Array<{ consumer: string; n: number }> };
          return new Map(result.rows.map((r) => [r.consumer, r.n]));
        };
        const progressOf = async (label: string, atLeast: number): Promise<boolean> =>
          ((await byMember()).get(label) ?? 0) >= atLeast;
        try {
          const a = member('a');
          await a.start();
          await waitFor('a to make progress', () => progressOf('a', 30), {
            timeoutMs: 30_000,
            intervalMs: 100,
          });
          const b = member('b');
          await b.start();
          await waitFor('b to join and make progress', () => progressOf('b', 30), {
            timeoutMs: 30_000,
            intervalMs: 100,
          });
          await a.stop();
          const c = member('c');
          await c.start();
          await waitFor('c to join and make progress', () => progressOf('c', 30), {
            timeoutMs: 30_000,
            intervalMs: 100,
          });
          await b.stop();
          await waitFor('c to go on alone', () => progressOf('c', 60), {
            timeoutMs: 30_000,
            intervalMs: 100,
          });
        } finally {
          producing = false;
          await flow;
        }
        const c = consumers[consumers.length - 1]!;

        const effects = async (): Promise<number> =>
          [...(await store.effectCounts()).keys()].filter((id) => id.startsWith(`${name}-`)).length;
        await waitFor(
          `all ${produced} messages to take effect`,
          async () => (await effects()) === produced,
          { timeoutMs: 40_000, intervalMs: 100 },
        );
        const ends = await admin.fetchTopicOffsets(topic);
        await waitFor(
          'offsets to be committed',
          async () => {
            const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
            return ends.every(
              (e) =>
                committed!.partitions.find((p) => p.partition === e.partition)?.offset === e.high,
            );
          },
          { timeoutMs: 30_000, intervalMs: 100 },
        );
        await c.stop();

        const counts = await store.effectCounts();
        const mine = [...counts].filter(([id]) => id.startsWith(`${name}-`));
        expect(mine).toHaveLength(produced);
        expect(mine.every(([, n]) => n === 1)).toBe(true);
        // Every member handled part of the flow.
        expect([...(await byMember()).keys()].sort()).toEqual(['a', 'b', 'c']);
        expect(outcomes.filter((o) => o.status === 'processed')).toHaveLength(produced);
        expect(
          outcomes.filter((o) => o.status === 'failed' || o.status === 'dead-lettered'),
        ).toHaveLength(0);

        // Per key, effects happened in production order despite the hand-overs.
        const rows = (await store.knex.raw(
          `select key, message_id from ${store.effectsTable} where message_id like ? order by seq`,
          [`${name}-%`],
        )) as { rows: Array<{ key: string; message_id: string }> };
        const last = new Map<string, number>();
        for (const row of rows.rows) {
          const n = Number(row.message_id.slice(name.length + 1));
          expect(n).toBeGreaterThan(last.get(row.key) ?? -1);
          last.set(row.key, n);
        }
      },
    );
  },
);
