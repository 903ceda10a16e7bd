import { checkPublisherContract } from '@justonce/core/testing';
import { createKafkaPublisher } from '../src';
import {
  CLIENTS,
  clientUnderTest,
  connectKafkaClients,
  createTopics,
  readTopic,
  unique,
  type KafkaClients,
} from './support';

let clients: KafkaClients;

beforeAll(async () => {
  clients = await connectKafkaClients();
});

afterAll(async () => {
  await clients.close();
});

describe.each(CLIENTS)('the Kafka publisher on %s (real broker)', (client) => {
  it('keeps the publisher contract the relay relies on', async () => {
    const topic = unique('contract');
    // Three partitions: each key's order must hold within its own.
    await createTopics(clients.admin, [topic], 3);
    const checks = await checkPublisherContract({
      publisher: createKafkaPublisher({ kafka: clientUnderTest(client, clients) }),
      destination: topic,
      invalidDestination: 'not a topic!',
      receive: async (destination, count) =>
        (await readTopic(clients.kafka, destination, count)).map((record) => ({
          messageId: record.headers['message-id'] ?? '',
          key: record.key,
          headers: record.headers,
          payload: new TextEncoder().encode(record.value ?? ''),
        })),
    });
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks).toHaveLength(6);
  });
});
