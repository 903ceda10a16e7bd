import { randomBytes } from 'node:crypto';
import { Kafka, Partitioners, logLevel, type Consumer, type KafkaMessage } from 'kafkajs';
import { kafkaBrokers } from '../../../test-support/services';
import { within } from '../../../test-support/timeout';

const suffix = randomBytes(5).toString('hex');
const topic = `smoke-${suffix}`;
const groupId = `smoke-group-${suffix}`;
const kafka = new Kafka({ brokers: kafkaBrokers(), clientId: 'smoke', logLevel: logLevel.ERROR });

/** Consumes with manual commits until `count` messages arrived; returns them. */
async function consume(consumer: Consumer, count: number): Promise<KafkaMessage[]> {
  const received: KafkaMessage[] = [];
  await consumer.subscribe({ topic, fromBeginning: true });
  await within(
    30_000,
    `${count} message(s) on ${topic}`,
    new Promise<void>((resolve, reject) => {
      consumer
        .run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => {
            received.push(message);
            const next = (BigInt(message.offset) + 1n).toString();
            await consumer.commitOffsets([{ topic, partition, offset: next }]);
            if (received.length === count) resolve();
          },
        })
        .catch(reject);
    }),
  );
  return received;
}

describe('Kafka service (smoke)', () => {
  const admin = kafka.admin();
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });

  beforeAll(async () => {
    await admin.connect();
    await producer.connect();
  });

  afterAll(async () => {
    await producer.disconnect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });

  it('creates a topic, produces, consumes in a group, commits, and re-reads the commit', async () => {
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(metadata.topics[0]?.partitions).toHaveLength(2);

    const values = ['one', 'two', 'three'];
    await producer.send({
      topic,
      acks: -1,
      // Both partitions get messages, so both get a committed offset.
      messages: values.map((value, i) => ({ key: `k${i}`, value, partition: i % 2 })),
    });

    const first = kafka.consumer({ groupId });
    await first.connect();
    try {
      const received = await consume(first, values.length);
      expect(received.map((m) => m.value?.toString()).sort()).toEqual([...values].sort());
    } finally {
      await first.disconnect();
    }

    // The committed offsets, read back from the group coordinator, cover every message.
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const ends = await admin.fetchTopicOffsets(topic);
    const byPartition = (list: Array<{ partition: number; offset: string }>) =>
      Object.fromEntries(list.map((p) => [p.partition, p.offset]));
    expect(byPartition(committed?.partitions ?? [])).toEqual(byPartition(ends));

    // A new member of the same group starts from the commit: it sees only what came after.
    await producer.send({ topic, acks: -1, messages: [{ key: 'k9', value: 'four' }] });
    const second = kafka.consumer({ groupId });
    await second.connect();
    try {
      const received = await consume(second, 1);
      expect(received.map((m) => m.value?.toString())).toEqual(['four']);
    } finally {
      await second.disconnect();
    }
  });
});
