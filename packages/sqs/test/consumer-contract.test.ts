import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import type { Logger } from '@justonce/core';
import {
  CONSUMER_CONTRACT_CLAUSES,
  checkConsumerContract,
  type ConsumerContractCheck,
  type ConsumerFeatures,
  type ContractConsumerSettings,
  type ContractMessage,
  type PartitionLogs,
} from '@justonce/core/testing';
import { createSqsConsumer, createSqsPublisher } from '../src';
import { openTestStore } from '../../core/test/db';
import { checkSqs, sqsClientSettings } from '../../../services/checks';
import { startPrivateElasticmq, type PrivateElasticmq } from '../../../services/private';
import { msUntilLine } from '../../../test-support/log-lines';
import { healAll, partitionOf, partitionUnavailable } from '../../../test-support/partition';
import { TestQueues, sqsClientConfig, unique } from './support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

// The run on the private server also restarts it and cuts the network to it under load.
jest.setTimeout(300_000);

/** The limits set small on the private server: every call 2 s, a receive its 1 s long poll on top. */
const REQUEST_MS = 2_000;
const WAIT_SECONDS = 1;
const RECEIVE_LIMIT_MS = WAIT_SECONDS * 1000 + REQUEST_MS;
/** Room for the timer, the event loop and the relay's cycle around each limit. */
const MARGIN_MS = 1_500;
const CUT_MS = 9_000;

let store: TestStore;
let queues: TestQueues;

beforeAll(async () => {
  store = await openTestStore('postgres');
  queues = new TestQueues();
});

afterAll(async () => {
  await healAll();
  await queues.dispose();
  await store.dispose();
});

/** A private ElasticMQ, and the queues created on it (re-created after a restart). */
interface PrivateServer {
  readonly server: PrivateElasticmq;
  readonly admin: SQSClient;
  readonly names: string[];
}

/** Creates a queue on the private server; FIFO when `name` ends in `.fifo`. */
async function createPrivateQueue(on: PrivateServer, name: string): Promise<string> {
  const fifo = name.endsWith('.fifo') ? { FifoQueue: 'true' } : {};
  const { QueueUrl } = await on.admin.send(
    new CreateQueueCommand({ QueueName: name, Attributes: fifo }),
  );
  if (!QueueUrl) throw new Error(`no URL for queue ${name}`);
  if (!on.names.includes(name)) on.names.push(name);
  return QueueUrl;
}

/** One queue kind and mode the contract runs on. */
interface Variant {
  readonly name: string;
  readonly fifo: boolean;
  readonly mode: 'message' | 'batch';
  readonly features: ConsumerFeatures;
  /** Runs on a private server, with the restart and partition clauses. */
  readonly faults?: boolean;
}

const VARIANTS: readonly Variant[] = [
  {
    name: 'standard queue, message mode, restarted and cut off (private server)',
    fifo: false,
    mode: 'message',
    features: {},
    faults: true,
  },
  { name: 'standard queue, batch mode', fifo: false, mode: 'batch', features: { batchMode: true } },
  {
    name: 'FIFO queue, message mode',
    fifo: true,
    mode: 'message',
    features: { ordersByKey: true },
  },
  {
    name: 'FIFO queue, batch mode',
    fifo: true,
    mode: 'batch',
    features: { ordersByKey: true, batchMode: true },
  },
];

/** Sends the contract's messages as a producer would: the id in the `message-id` attribute. */
async function send(
  sender: TestQueues,
  fifo: boolean,
  queueUrl: string,
  messages: readonly ContractMessage[],
) {
  await sender.send(
    queueUrl,
    messages.map((m) => ({
      body: m.body,
      attributes: { ...m.headers, ...(m.id === undefined ? {} : { 'message-id': m.id }) },
      ...(fifo
        ? {
            // The key is the group; a message without one goes in the group of its id, so the
            // copies of one id keep their order as the publisher would send them.
            group: m.key ?? m.id ?? 'contract',
            // A deduplication id of its own per send: SQS would drop a copy sent with the
            // same one, and the contract's copies are there to test the inbox's deduplication.
            dedupe: randomUUID(),
          }
        : {}),
    })),
  );
}

/** The SQS consumer built from the contract's settings. */
function consumerOf(
  on: PrivateServer | undefined,
  variant: Variant,
  queueUrl: string,
  s: ContractConsumerSettings,
) {
  const { extract, fallback } = s.messageId;
  return createSqsConsumer({
    ...(on === undefined
      ? { clientConfig: sqsClientConfig() }
      : {
          clientConfig: sqsClientSettings(on.server.endpoint),
          timeouts: { connectMs: 1_000, requestMs: REQUEST_MS },
          visibilityTimeoutSeconds: 5,
        }),
    queueUrl,
    mode: variant.mode,
    inbox: s.inbox,
    handler: s.handler,
    onSettled: s.onSettled,
    messageId: {
      fallback,
      ...(extract === undefined ? {} : { extract: (m: Message) => extract(m.Body ?? '') }),
    },
    ...(s.concurrency === undefined ? {} : { concurrency: s.concurrency }),
    ...(s.resilience === undefined ? {} : { resilience: s.resilience }),
    // Short long polls and holds, so the clauses' stops and outage rounds stay short.
    waitTimeSeconds: WAIT_SECONDS,
    retry: { baseMs: 100, capMs: 1_000 },
    ...(s.logger === undefined ? {} : { logger: s.logger }),
  });
}

/** The failed clauses with their problems, for a readable failure. */
const failed = (checks: readonly ConsumerContractCheck[]): string[] =>
  checks.filter((c) => !c.ok).map((c) => `${c.clause}: ${c.problem ?? ''}`);

/**
 * What the SQS clients say about a cut: the consumer warns once per outage (not once per poll:
 * the cut spans several receive limits) within its receive limit and says when it receives
 * again; the publisher warns within its request limit and the relay says its publish failed.
 */
function sqsPartitionLogs(logs: PartitionLogs): string | undefined {
  const { cutAt, healedAt } = logs;
  const receive = 'sqs consumer: ReceiveMessage';
  const relayNotice = msUntilLine(logs.relay, cutAt, {
    level: 'warn',
    message: 'relay: publish failed',
  });
  if (relayNotice === null || relayNotice > REQUEST_MS + MARGIN_MS) {
    return `the relay said its publish failed after ${relayNotice} ms`;
  }
  const consumerNotice = msUntilLine(logs.consumer, cutAt, { level: 'warn', message: receive });
  if (consumerNotice === null || consumerNotice > RECEIVE_LIMIT_MS + MARGIN_MS) {
    return `the consumer warned about ReceiveMessage after ${consumerNotice} ms`;
  }
  const publisherNotice = msUntilLine(logs.publisher, cutAt, {
    level: 'warn',
    message: 'sqs publisher:',
  });
  if (publisherNotice === null || publisherNotice > REQUEST_MS + MARGIN_MS) {
    return `the publisher warned after ${publisherNotice} ms`;
  }
  const receiveWarnings = logs.consumer.filter(
    (l) => l.level === 'warn' && l.message.startsWith(receive),
  ).length;
  if (receiveWarnings !== 1) return `the consumer warned ${receiveWarnings} times, not once`;
  if (msUntilLine(logs.consumer, healedAt, { level: 'info', message: receive }) === null) {
    return 'the consumer never said it receives again';
  }
  return undefined;
}

/**
 * The restart and partition features of a private server. ElasticMQ keeps queues and messages
 * in memory only: its start re-creates the queues, as a deployment's provisioning would, and
 * the messages it held are gone (`losesMessages`).
 */
function faultFeatures(on: PrivateServer): ConsumerFeatures {
  const network = partitionOf(Number(new URL(on.server.endpoint).port));
  return {
    restart: {
      stop: () => on.server.kill(),
      start: async () => {
        await on.server.start();
        for (const name of on.names) await createPrivateQueue(on, name);
      },
      isUp: async () => (await checkSqs(on.server.endpoint)).ok,
      losesMessages: true,
      recoveryMs: 30_000,
    },
    partition: {
      cut: () => network.cut(),
      heal: () => network.heal(),
      cutMs: CUT_MS,
      noticeMs: { consumer: RECEIVE_LIMIT_MS + MARGIN_MS, publisher: REQUEST_MS + MARGIN_MS },
      recoveryMs: 7_000,
      checkLogs: sqsPartitionLogs,
    },
  };
}

/** A private server for a variant with faults; the shared one otherwise. */
async function serverFor(variant: Variant): Promise<PrivateServer | undefined> {
  if (variant.faults !== true) return undefined;
  // A partition that cannot be played is a failure with the reason, never a skip.
  const unavailable = await partitionUnavailable();
  if (unavailable !== undefined) throw new Error(`cannot cut the network: ${unavailable}`);
  const server = await startPrivateElasticmq(60_000);
  return { server, admin: new SQSClient(sqsClientSettings(server.endpoint)), names: [] };
}

describe('the SQS consumer keeps the consumer contract (ElasticMQ)', () => {
  it.each(VARIANTS)('on a $name', async (variant) => {
    const on = await serverFor(variant);
    // Sends through the private server's client when there is one.
    const sender = on === undefined ? queues : Object.assign(new TestQueues(), { sqs: on.admin });
    try {
      const checks = await checkConsumerContract({
        store,
        newDestination: () =>
          on === undefined
            ? queues.create(unique('cc', variant.fifo))
            : createPrivateQueue(on, unique('cc', variant.fifo)),
        send: (queueUrl, messages) => send(sender, variant.fifo, queueUrl, messages),
        createConsumer: (queueUrl, settings) => consumerOf(on, variant, queueUrl, settings),
        ...(on === undefined
          ? {}
          : {
              createPublisher: (logger: Logger) =>
                createSqsPublisher({
                  clientConfig: sqsClientSettings(on.server.endpoint),
                  timeouts: { connectMs: 1_000, requestMs: REQUEST_MS },
                  logger,
                }),
            }),
        features: {
          reportsReceiveCount: true,
          ...variant.features,
          ...(on === undefined ? {} : faultFeatures(on)),
        },
      });
      for (const c of checks) {
        if (c.figures) console.log(JSON.stringify({ clause: c.clause, ...c.figures }));
      }
      expect(failed(checks)).toEqual([]);
      expect(checks.map((c) => c.clause)).toEqual(Object.values(CONSUMER_CONTRACT_CLAUSES));
      expect(checks.filter((c) => c.skipped !== undefined).length).toBe(on ? 0 : 2);
      // The clauses that run side by side finish within 20 s; the fault clauses take longer.
      const sideBySide = checks.filter((c) => c.figures === undefined && c.skipped === undefined);
      expect(Math.max(...sideBySide.map((c) => c.durationMs))).toBeLessThan(20_000);
    } finally {
      if (on !== undefined) {
        on.admin.destroy();
        await on.server.dispose();
      }
    }
  });
});
