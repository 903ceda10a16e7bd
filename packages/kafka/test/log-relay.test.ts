import type { Admin, Kafka } from 'kafkajs';
import { createOutbox, createRelay } from '@justonce/core';
import { createKafkaPublisher } from '../src';
import { openLogStore, type LogTestStore } from '../../core/test/fixtures/log-relay-support';
import { createTopics, kafkaBrokers, readTopic, testKafka, unique } from './support';

describe("the outbox relay in mode 'log' publishing through createKafkaPublisher", () => {
  let kafka: Kafka;
  let admin: Admin;
  let store: LogTestStore;
  const topic = unique('log-relay');

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    await createTopics(admin, [topic], 3);
    store = await openLogStore();
  });
  afterAll(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    await store.dispose();
  });

  it('publishes what committed from the WAL, keyed, with its ids, in commit order per key', async () => {
    const publisher = createKafkaPublisher({ brokers: kafkaBrokers() });
    try {
      const relay = createRelay({ store, publisher, mode: 'log' });
      await relay.runOnce(); // creates the publication and the slot
      const outbox = createOutbox({ store });
      const ids: string[] = [];
      for (let seq = 0; seq < 5; seq += 1) {
        ids.push(
          ...(await store.knex.transaction((trx) =>
            outbox.add(
              trx,
              ['a', 'b', 'c'].map((key) => ({ destination: topic, key, payload: { key, seq } })),
            ),
          )),
        );
      }
      expect(await relay.runOnce()).toMatchObject({ published: 15, failed: 0 });
      const records = await readTopic(kafka, topic, 15);
      expect(records.map((r) => r.headers['message-id']).sort()).toEqual([...ids].sort());
      for (const key of ['a', 'b', 'c']) {
        const mine = records.filter((r) => r.key === key);
        expect(new Set(mine.map((r) => r.partition)).size).toBe(1);
        expect(mine.map((r) => (JSON.parse(r.value!) as { seq: number }).seq)).toEqual([
          0, 1, 2, 3, 4,
        ]);
      }
    } finally {
      await publisher.close();
    }
  });
});
