import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { createInbox, type InboxOutcome } from '@justonce/core';
import { createKafkaConsumer, type KafkaConsumer } from '../src';
import { databaseUrl } from '../../core/test/db';
import {
  FAST_GROUP,
  createTopics,
  kafkaBrokers,
  openEffectsStore,
  produce,
  unique,
  connectKafkaClients,
  type KafkaClients,
} from './support';
import { waitFor } from '../../../test-support/wait-for';
import { spawnUntilMarker } from '../../../test-support/child-process';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CHILD = path.join(__dirname, 'crash-child.ts');

let kafka: Kafka;
let admin: Admin;
let producer: Producer;
let clients: KafkaClients;
const children: ChildProcess[] = [];
const consumers: KafkaConsumer[] = [];

beforeAll(async () => {
  clients = await connectKafkaClients();
  ({ kafka, admin, producer } = clients);
});

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  await Promise.all(consumers.splice(0).map((c) => c.stop()));
});

afterAll(async () => {
  await clients.close();
});

/** Starts the child consumer and resolves once it printed `AT-STEP` (or rejects if it exits). */
function runChildUntilStep(envs: Record<string, string>): Promise<ChildProcess> {
  return spawnUntilMarker(CHILD, {
    cwd: ROOT,
    env: envs,
    onSpawn: (child) => children.push(child),
  });
}

describe('a consumer process killed with SIGKILL in the middle of a batch', () => {
  it.each([
    ['handler-done', 'with its transaction open'],
    ['committed', 'after its transaction committed, before the offset commit'],
  ])(
    'at %s (%s): a new member takes over and every message has exactly one effect',
    async (step) => {
      const store = await openEffectsStore();
      try {
        const topic = unique('crash');
        const groupId = unique('g');
        const name = unique('c');
        const total = 200;
        await createTopics(admin, [topic], 2);
        await produce(
          producer,
          topic,
          Array.from({ length: total }, (_, i) => ({
            key: `k${i % 8}`,
            value: String(i),
            headers: { 'message-id': `${name}-${i}` },
          })),
        );

        const child = await runChildUntilStep({
          KAFKA_BROKERS: kafkaBrokers().join(','),
          DATABASE_URL: databaseUrl(),
          CRASH_SCHEMA: store.schema,
          CRASH_TOPIC: topic,
          CRASH_GROUP: groupId,
          CRASH_CONSUMER: name,
          CRASH_STEP: step!,
          CRASH_AFTER: '60',
        });
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
        expect(child.signalCode).toBe('SIGKILL');

        const outcomes: InboxOutcome[] = [];
        const takeover = createKafkaConsumer({
          kafka,
          groupId,
          topics: [topic],
          fromBeginning: true,
          batchSize: 25,
          consumerConfig: FAST_GROUP,
          inbox: createInbox({ store, consumer: name }),
          handler: async (ctx) => {
            await ctx.trx.raw(
              `insert into ${store.effectsTable} (message_id, consumer) values (?, ?)`,
              [ctx.messageId, 'takeover'],
            );
          },
          onSettled: ({ outcome }) => void (outcome && outcomes.push(outcome)),
        });
        consumers.push(takeover);
        await takeover.start();

        await waitFor(
          'every message to take effect',
          async () => {
            const counts = await store.effectCounts();
            return counts.size === total;
          },
          { timeoutMs: 45_000, intervalMs: 100 },
        );
        const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
        const ends = await admin.fetchTopicOffsets(topic);
        await waitFor(
          `offsets to be committed (were ${JSON.stringify(offsets)})`,
          async () => {
            const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
            return ends.every(
              (e) =>
                committed[0]!.partitions.find((p) => p.partition === e.partition)?.offset ===
                e.high,
            );
          },
          { timeoutMs: 30_000, intervalMs: 100 },
        );

        const counts = await store.effectCounts();
        expect(counts.size).toBe(total);
        expect([...counts.values()].every((n) => n === 1)).toBe(true);
        const byConsumer = (await store.knex.raw(
          `select consumer, count(*)::int as n from ${store.effectsTable} group by consumer order by consumer`,
        )) as { rows: Array<{ consumer: string; n: number }> };
        const child_ = byConsumer.rows.find((r) => r.consumer === 'child')?.n ?? 0;
        // The child committed some work before it died, and the takeover did the rest.
        expect(child_).toBeGreaterThan(0);
        expect(child_).toBeLessThan(total);
        if (step === 'committed') {
          // The batch that committed in the database but not in Kafka comes back as duplicates.
          expect(outcomes.some((o) => o.status === 'duplicate')).toBe(true);
        }
      } finally {
        await store.dispose();
      }
    },
  );
});
