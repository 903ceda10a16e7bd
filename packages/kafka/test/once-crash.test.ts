import { createKafkaConsumer } from '../src';
import { databaseUrl } from '../../core/test/db';
import {
  FAST_GROUP,
  clientUnderTest,
  connectKafkaClients,
  createTopics,
  kafkaBrokers,
  produce,
  unique,
  type KafkaClients,
} from './support';
import { killCrashChildren } from '../../../test-support/crash-child';
import { openEffectsStore, type EffectsStore } from '../../../test-support/effects';
import { checkOnceCrash } from '../../../test-support/once-crash';

let clients: KafkaClients;
let store: EffectsStore;

beforeAll(async () => {
  clients = await connectKafkaClients();
  store = await openEffectsStore();
});
afterEach(async () => {
  await killCrashChildren();
});
afterAll(async () => {
  await store.dispose();
  await clients.close();
});

it('ctx.once on Kafka: killed between the remote call and its record, the next member calls again with the same key, once', async () => {
  const topic = unique('once');
  const groupId = unique('g');
  const consumer = unique('c');
  const messageId = `${consumer}-1`;
  await createTopics(clients.admin, [topic], 1);
  await produce(clients.producer, topic, [
    { key: 'k', value: 'payload', headers: { 'message-id': messageId } },
  ]);
  const options = { groupId, topics: [topic], fromBeginning: true, consumerConfig: FAST_GROUP };
  await checkOnceCrash({
    store,
    databaseUrl: databaseUrl(),
    consumer,
    messageId,
    transport: { kind: 'kafka', options: { ...options, brokers: kafkaBrokers() } },
    finish: async (inbox, handler) => {
      const member = createKafkaConsumer({
        ...options,
        kafka: clientUnderTest('kafkajs', { kafka: clients.kafka }),
        inbox,
        handler,
      });
      await member.start();
      return () => member.stop();
    },
  });
});
