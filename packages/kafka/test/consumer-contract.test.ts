import {
  CONSUMER_CONTRACT_CLAUSES,
  checkConsumerContract,
  type ConsumerContractCheck,
  type ConsumerContractOptions,
  type ConsumerFeatures,
  type ContractConsumerSettings,
  type PartitionLogs,
} from '@justonce/core/testing';
import type { Logger } from '@justonce/core';
import { Kafka, logLevel } from 'kafkajs';
import {
  createKafkaConsumer,
  createKafkaPublisher,
  type KafkaClientName,
  type KafkaConsumer,
  type KafkaDelivery,
} from '../src';
import { openTestStore } from '../../core/test/db';
import { checkKafka } from '../../../services/checks';
import { startPrivateKafka, type PrivateKafka } from '../../../services/private';
import { msUntilLine } from '../../../test-support/log-lines';
import { healAll, partitionOf, partitionUnavailable } from '../../../test-support/partition';
import {
  CLIENTS,
  FAST_GROUP,
  clientUnderTest,
  connectKafkaClients,
  createTopics,
  produce,
  unique,
  type KafkaClients,
} from './support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

// The run on the private broker also restarts it and cuts the network to it under load.
jest.setTimeout(300_000);

/** The limits set small on the private broker, so that a 15 s cut outlasts every one of them. */
const TIMEOUTS = { connectMs: 1_000, requestMs: 3_000 };
const SEND_TIMEOUT_MS = 4_000;
const CUT_MS = 15_000;
/** Room for a timer tick, a heartbeat in between and a loaded machine. */
const MARGIN_MS = 2_000;
/** The consumer notices at the first request that times out: a heartbeat or a fetch. */
const CONSUMER_NOTICE_MS =
  TIMEOUTS.requestMs + FAST_GROUP.heartbeatInterval + FAST_GROUP.maxWaitTimeInMs + MARGIN_MS;
/** The relay's publish call comes back as an outage after the publisher's send limit. */
const PUBLISHER_NOTICE_MS = SEND_TIMEOUT_MS + MARGIN_MS;

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
  await healAll();
  await clients.close();
  await store.dispose();
});

const bodyText = ({ record }: KafkaDelivery): string => record.value?.toString() ?? '';

/** The Kafka consumer of `topic` built from the contract's settings. */
function contractConsumer(
  client: KafkaClientName,
  broker: PrivateKafka | undefined,
  mode: 'batch' | 'message',
  topic: string,
  s: ContractConsumerSettings,
): KafkaConsumer {
  const { extract, fallback } = s.messageId;
  return createKafkaConsumer({
    ...(broker === undefined
      ? { kafka: clientUnderTest(client, clients) }
      : { brokers: [broker.broker], timeouts: TIMEOUTS, client }),
    groupId: unique('contract-g'),
    topics: [topic],
    mode,
    // The contract sends right after `start` resolves, which can be before the group has
    // assigned the partitions: a new group must then read from the start, not the end.
    fromBeginning: true,
    consumerConfig: FAST_GROUP,
    inbox: s.inbox,
    // The consumer checks its inbox's dedup mode against its own option.
    ...(s.inbox.settings?.dedup === undefined ? {} : { dedup: s.inbox.settings.dedup }),
    handler: s.handler,
    onSettled: s.onSettled,
    messageId: {
      fallback,
      ...(extract === undefined ? {} : { extract: (d: KafkaDelivery) => extract(bodyText(d)) }),
    },
    ...(s.concurrency === undefined ? {} : { concurrency: s.concurrency }),
    ...(s.resilience === undefined ? {} : { resilience: s.resilience }),
    ...(s.logger === undefined ? {} : { logger: s.logger }),
  });
}

/** Failed clauses with their problem, so a failure names what went wrong. */
const failures = (checks: readonly ConsumerContractCheck[]): string[] =>
  checks.filter((c) => !c.ok).map((c) => `${c.clause}: ${c.problem ?? '?'}`);

/**
 * What the Kafka clients say about a cut: one warning per outage from the consumer ("cannot
 * reach the broker"), and one or two from the publisher (a send begun on a connection from
 * before the cut can still time out once after the heal, a second, short outage of its own);
 * each says when it reaches the broker again.
 */
function kafkaPartitionLogs(logs: PartitionLogs): string | undefined {
  const cannot = /cannot reach the broker/;
  const count = (side: 'consumer' | 'publisher'): number =>
    logs[side].filter((l) => cannot.test(l.message)).length;
  const consumerNotice = msUntilLine(logs.consumer, logs.cutAt, { message: cannot });
  const publisherNotice = msUntilLine(logs.publisher, logs.cutAt, { message: cannot });
  if (consumerNotice === null || consumerNotice >= CONSUMER_NOTICE_MS) {
    return `the consumer said it cannot reach the broker after ${consumerNotice} ms`;
  }
  if (publisherNotice === null || publisherNotice >= PUBLISHER_NOTICE_MS) {
    return `the publisher said it cannot reach the broker after ${publisherNotice} ms`;
  }
  // A failure names each line and its time from the cut, so a second warning can be told
  // apart: a second outage (a line that it reaches the broker again between) or a repeat.
  const timeline = (side: 'consumer' | 'publisher'): string =>
    logs[side].map((l) => `${l.at - logs.cutAt} ms ${l.level} ${l.message}`).join('; ');
  if (count('consumer') !== 1) {
    return `the consumer warned ${count('consumer')} times, not once: ${timeline('consumer')}`;
  }
  if (count('publisher') < 1 || count('publisher') > 2) {
    return `the publisher warned ${count('publisher')} times, not once or twice: ${timeline('publisher')}`;
  }
  for (const side of ['consumer', 'publisher'] as const) {
    if (msUntilLine(logs[side], logs.healedAt, { message: /reaches the broker again/ }) === null) {
      return `the ${side} never said it reaches the broker again`;
    }
  }
  return undefined;
}

/** The restart (SIGKILL, data kept) and partition features of a private broker. */
function faultFeatures(broker: PrivateKafka): ConsumerFeatures {
  const network = partitionOf(broker.node.port);
  return {
    restart: {
      stop: () => broker.kill(),
      start: () => broker.start({ keepData: true }),
      isUp: async () => (await checkKafka([broker.broker])).ok,
      recoveryMs: 30_000,
    },
    partition: {
      cut: () => network.cut(),
      heal: () => network.heal(),
      cutMs: CUT_MS,
      noticeMs: { consumer: CONSUMER_NOTICE_MS, publisher: PUBLISHER_NOTICE_MS },
      recoveryMs: 8_000,
      checkLogs: kafkaPartitionLogs,
    },
  };
}

/** Clients of a private broker, for its topics and its sends. */
async function privateClients(broker: PrivateKafka): Promise<KafkaClients> {
  const kafka = new Kafka({
    clientId: unique('contract'),
    brokers: [broker.broker],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  const producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  return {
    kafka,
    admin,
    producer,
    close: () => Promise.all([admin.disconnect(), producer.disconnect()]).then(() => undefined),
  };
}

/** The contract's topics (and their dead-letter topics) on a broker. */
function newTopic(on: KafkaClients, label: string): () => Promise<string> {
  return async () => {
    const topic = unique(`cc-${label}`);
    // The dead-letter topic too: the poison and bad-input clauses forward to it.
    await createTopics(on.admin, [topic, `${topic}.dlq`], PARTITIONS);
    return topic;
  };
}

/** The contract's sends, as Kafka records. */
function sendTo(on: KafkaClients): ConsumerContractOptions['send'] {
  return (topic, messages) =>
    produce(
      on.producer,
      topic,
      messages.map((m) => ({
        value: m.body,
        headers: { ...m.headers, ...(m.id === undefined ? {} : { 'message-id': m.id }) },
        ...(m.key === undefined ? {} : { key: m.key }),
      })),
    );
}

/**
 * Batch mode runs on the shared broker. Message mode runs on a private broker (the other test
 * files keep the shared one) with the fault clauses too: the broker killed (SIGKILL) and
 * restarted with its data, then the network to it cut for 15 s, each under load. The restart
 * with its data gone is broker-restart.test.ts.
 */
const CLIENT_MODES = CLIENTS.flatMap((client) =>
  (['message', 'batch'] as const).map((mode) => [client, mode] as const),
);

describe.each(CLIENT_MODES)('the Kafka consumer on %s in %s mode', (client, mode) => {
  it('keeps the consumer contract on the real broker', async () => {
    let broker: PrivateKafka | undefined;
    let on = clients;
    const features: ConsumerFeatures = {
      ordersByKey: true,
      ...(mode === 'batch' ? { batchMode: true } : {}),
    };
    let faults: ConsumerFeatures = {};
    if (mode === 'message') {
      // A partition that cannot be played is a failure with the reason, never a skip.
      const unavailable = await partitionUnavailable();
      if (unavailable !== undefined) throw new Error(`cannot cut the network: ${unavailable}`);
      broker = await startPrivateKafka(60_000);
      on = await privateClients(broker);
      faults = faultFeatures(broker);
    }
    try {
      const own = broker;
      const checks = await checkConsumerContract({
        store,
        newDestination: newTopic(on, mode),
        send: sendTo(on),
        createConsumer: (topic, settings) => contractConsumer(client, own, mode, topic, settings),
        ...(own === undefined
          ? {}
          : {
              createPublisher: (logger: Logger) =>
                createKafkaPublisher({
                  brokers: [own.broker],
                  client,
                  timeouts: TIMEOUTS,
                  ackTimeoutMs: 2_000,
                  sendTimeoutMs: SEND_TIMEOUT_MS,
                  logger,
                }),
            }),
        features: { ...features, ...faults },
        timeoutMs: 20_000,
      });
      for (const c of checks)
        if (c.figures) console.log(JSON.stringify({ clause: c.clause, ...c.figures }));
      expect(checks.map((c) => c.clause)).toEqual(Object.values(CONSUMER_CONTRACT_CLAUSES));
      expect(failures(checks)).toEqual([]);
      expect(checks.filter((c) => c.skipped !== undefined).length).toBe(mode === 'message' ? 0 : 2);
    } finally {
      if (broker !== undefined) {
        await on.close().catch(() => undefined);
        await broker.dispose();
      }
    }
  });
});

/**
 * The inbox's watermark dedup modes keep the contract too, in batch mode on the shared broker
 * (the fault clauses run above, in the `ids` mode). `watermark` skips the three clauses that
 * send one id twice: it does not catch a producer's copies at other offsets by design.
 */
const CLIENT_DEDUPS = (['watermark', 'watermark+ids'] as const).map(
  // kafkajs only: the consumer refuses the watermark modes on platformatic for now.
  (dedup) => ['kafkajs', dedup] as const,
);

describe.each(CLIENT_DEDUPS)(
  'the Kafka consumer on %s in batch mode with dedup %s',
  (client, dedup) => {
    it('keeps the consumer contract on the real broker', async () => {
      const checks = await checkConsumerContract({
        store,
        newDestination: newTopic(clients, `wm-${dedup === 'watermark' ? 'w' : 'wi'}`),
        send: sendTo(clients),
        createConsumer: (topic, settings) =>
          contractConsumer(client, undefined, 'batch', topic, settings),
        features: { ordersByKey: true, batchMode: true },
        timeoutMs: 20_000,
        dedup,
      });
      expect(checks.map((c) => c.clause)).toEqual(Object.values(CONSUMER_CONTRACT_CLAUSES));
      expect(failures(checks)).toEqual([]);
      const skipped = checks.filter((c) => c.skipped !== undefined).map((c) => c.clause);
      const copies = [
        CONSUMER_CONTRACT_CLAUSES.duplicate,
        CONSUMER_CONTRACT_CLAUSES.concurrent,
        CONSUMER_CONTRACT_CLAUSES.extract,
      ];
      const faults = [CONSUMER_CONTRACT_CLAUSES.restart, CONSUMER_CONTRACT_CLAUSES.partition];
      expect(skipped).toEqual(dedup === 'watermark' ? [...copies, ...faults] : faults);
    });
  },
);
