import {
  CONSUMER_CONTRACT_CLAUSES,
  checkConsumerContract,
  type ContractCheck,
  type ContractConsumerSettings,
} from '@justonce/core/testing';
import { createKafkaConsumer, type KafkaConsumer, type KafkaDelivery } from '../src';
import { openTestStore } from '../../core/test/db';
import {
  FAST_GROUP,
  connectKafkaClients,
  createTopics,
  produce,
  unique,
  type KafkaClients,
} from './support';
import { waitFor } from '../../../test-support/wait-for';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/**
 * Partitions of each contract topic: four, so that the concurrent clause's two keys (`k-1`,
 * `k-2`) hash to different partitions (2 and 0; with two or three partitions they share one),
 * which `concurrency: 2` then handles at once.
 */
const PARTITIONS = 4;

let clients: KafkaClients;
let store: TestStore;

beforeAll(async () => {
  clients = await connectKafkaClients();
  store = await openTestStore('postgres');
});

afterAll(async () => {
  await clients.close();
  await store.dispose();
});

/**
 * Creates topics and waits until the broker's metadata shows a leader for each partition.
 * kafkajs's own wait (`waitForLeaders`) retries only LEADER_NOT_AVAILABLE; on a busy shared
 * broker the metadata of a topic just created can still answer UNKNOWN_TOPIC_OR_PARTITION,
 * which would fail the clause before its consumer even started.
 */
async function createReadyTopics(topics: string[]): Promise<void> {
  await createTopics(clients.admin, topics, PARTITIONS).catch((error: unknown) => {
    if ((error as { type?: unknown }).type !== 'UNKNOWN_TOPIC_OR_PARTITION') throw error;
  });
  const ready = async (): Promise<boolean> => {
    try {
      const { topics: found } = await clients.admin.fetchTopicMetadata({ topics });
      return found.every(
        (t) => t.partitions.length === PARTITIONS && t.partitions.every((p) => p.leader >= 0),
      );
    } catch {
      return false;
    }
  };
  await waitFor(`topics ${topics.join(', ')} ready`, ready, { timeoutMs: 10_000, intervalMs: 50 });
}

const bodyText = ({ record }: KafkaDelivery): string => record.value?.toString() ?? '';

/** The Kafka consumer of `topic` built from the contract's settings. */
function contractConsumer(
  mode: 'batch' | 'message',
  topic: string,
  s: ContractConsumerSettings,
): KafkaConsumer {
  const { extract, fallback } = s.messageId;
  return createKafkaConsumer({
    kafka: clients.kafka,
    groupId: unique('contract-g'),
    topics: [topic],
    mode,
    // The contract sends right after `start` resolves, which can be before the group has
    // assigned the partitions: a new group must then read from the start, not the end.
    fromBeginning: true,
    consumerConfig: FAST_GROUP,
    inbox: s.inbox,
    handler: s.handler,
    onSettled: s.onSettled,
    messageId: {
      fallback,
      ...(extract === undefined ? {} : { extract: (d: KafkaDelivery) => extract(bodyText(d)) }),
    },
    ...(s.concurrency === undefined ? {} : { concurrency: s.concurrency }),
  });
}

/** Failed clauses with their problem, so a failure names what went wrong. */
const failures = (checks: readonly ContractCheck[]): string[] =>
  checks.filter((c) => !c.ok).map((c) => `${c.clause}: ${c.problem ?? '?'}`);

describe.each(['message', 'batch'] as const)('the Kafka consumer in %s mode', (mode) => {
  it('keeps the consumer contract on the real broker', async () => {
    const checks = await checkConsumerContract({
      store,
      newDestination: async () => {
        const topic = unique(`cc-${mode}`);
        // The dead-letter topic too: the poison and bad-input clauses forward to it.
        await createReadyTopics([topic, `${topic}.dlq`]);
        return topic;
      },
      send: (topic, messages) =>
        produce(
          clients.producer,
          topic,
          messages.map((m) => ({
            value: m.body,
            headers: { ...m.headers, ...(m.id === undefined ? {} : { 'message-id': m.id }) },
            ...(m.key === undefined ? {} : { key: m.key }),
          })),
        ),
      createConsumer: (topic, settings) => contractConsumer(mode, topic, settings),
      features: { ordersByKey: true, ...(mode === 'batch' ? { batchMode: true } : {}) },
      timeoutMs: 20_000,
    });
    expect(checks.map((c) => c.clause)).toEqual(Object.values(CONSUMER_CONTRACT_CLAUSES));
    expect(failures(checks)).toEqual([]);
  });
});
