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
import { connect, type Channel, type ConsumeMessage } from 'amqplib';
import { openTestStore } from '../../core/test/db';
import {
  createRabbitConsumer,
  createRabbitPublisher,
  PARTITION_KEY_HEADER,
  type RabbitConsumer,
} from '../src';
import { checkRabbitmq } from '../../../services/checks';
import { startPrivateRabbitmq } from '../../../services/private';
import type { RabbitmqNode } from '../../../services/rabbitmq';
import { firstLineAfter } from '../../../test-support/log-lines';
import { healAll, partitionOf, partitionUnavailable } from '../../../test-support/partition';
import { amqpUrl, openAdmin, uniqueName, type Admin } from './broker';

/**
 * The shared consumer contract on the real broker, on both queue types, in message and in
 * batch mode. Each clause gets a fresh queue the consumer declares when it starts (so `send`
 * always finds it), and the topology is removed afterwards. The classic queue in message mode
 * runs on a private node (the other test files keep the shared server) with the fault clauses
 * too: the broker application stopped and started (`rabbitmqctl stop_app`, `start_app`), then
 * the network to it cut for 10 s, each under load.
 */

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

jest.setTimeout(300_000);

/** The time limits of the private node's clients, set small so that a 10 s cut outlasts them. */
const LIMITS = {
  heartbeatSeconds: 2,
  connectTimeoutMs: 2_000,
  operationTimeoutMs: 2_000,
  confirmTimeoutMs: 3_000,
  reconnect: { baseMs: 100, capMs: 1_000 },
} as const;
/** amqplib declares a connection dead after two to three silent heartbeat intervals. */
const HEARTBEAT_NOTICE_MS = 3 * LIMITS.heartbeatSeconds * 1000;
/** Timers and the event loop are late by a little under load. */
const MARGIN_MS = 1_500;

/** A failed clause with its problem, so a failure says what went wrong, not only which. */
const failures = (checks: readonly ConsumerContractCheck[]): string[] =>
  checks.filter((c) => !c.ok).map((c) => `${c.clause}: ${c.problem ?? 'no problem given'}`);

/**
 * What the RabbitMQ clients say about a cut: each says once that it lost its connection or
 * channel and is reconnecting (not once per failed attempt or message), nothing else, and
 * says when it is back.
 */
function rabbitPartitionLogs(logs: PartitionLogs): string | undefined {
  const notInfo = (side: 'consumer' | 'publisher'): string[] =>
    logs[side].filter((l) => l.level !== 'info').map((l) => l.message);
  const expected = {
    consumer: 'rabbitmq consumer lost its connection; reconnecting',
    publisher: 'rabbitmq publisher lost its channel; reconnecting',
  };
  for (const side of ['consumer', 'publisher'] as const) {
    const said = notInfo(side);
    if (said.length !== 1 || said[0] !== expected[side]) {
      return `the ${side} warned ${JSON.stringify(said)}, not once "${expected[side]}"`;
    }
    if (!firstLineAfter(logs[side], logs.cutAt, { message: `rabbitmq ${side} reconnected` })) {
      return `the ${side} never said it reconnected`;
    }
  }
  return undefined;
}

/** The restart (stop_app, 4 s down, start_app) and partition features of a private node. */
function faultFeatures(node: RabbitmqNode): ConsumerFeatures {
  const network = partitionOf(Number(new URL(node.url).port));
  return {
    restart: {
      stop: () => node.stopApp(),
      start: () => node.startApp(),
      isUp: async () => (await checkRabbitmq(node.url)).ok,
      downMs: 4_000,
      recoveryMs: 30_000,
    },
    partition: {
      cut: () => network.cut(),
      heal: () => network.heal(),
      cutMs: 10_000,
      // The consumer's heartbeat; the publisher's confirm timeout (the relay is always
      // publishing) or heartbeat, whichever fires first.
      noticeMs: {
        consumer: HEARTBEAT_NOTICE_MS + MARGIN_MS,
        publisher: Math.min(HEARTBEAT_NOTICE_MS, LIMITS.confirmTimeoutMs) + MARGIN_MS,
      },
      recoveryMs: 5_000,
      checkLogs: rabbitPartitionLogs,
    },
  };
}

/** Sends the contract's messages straight to a queue, the id and key in headers. */
function sendTo(channel: Channel, queue: string, messages: readonly ContractMessage[]): void {
  for (const m of messages) {
    const headers: Record<string, string> = { ...m.headers };
    if (m.id !== undefined) headers['message-id'] = m.id;
    if (m.key !== undefined) headers[PARTITION_KEY_HEADER] = m.key;
    channel.sendToQueue(queue, Buffer.from(m.body), { persistent: true, headers });
  }
}

describe('the RabbitMQ consumer keeps the consumer contract (real broker)', () => {
  let store: TestStore;
  let admin: Admin;
  const created: RabbitConsumer[] = [];

  beforeAll(async () => {
    store = await openTestStore('postgres');
    admin = await openAdmin();
  });
  afterAll(async () => {
    await healAll();
    // The contract stopped every consumer; a second stop resolves at once.
    for (const consumer of created.splice(0)) {
      await consumer.stop();
      const t = consumer.topology();
      await admin.remove({
        queues: [t.queue, ...t.retryQueues, ...(t.deadLetterQueue ? [t.deadLetterQueue] : [])],
        exchanges: [t.deadLetterExchange],
      });
    }
    await admin.close();
    await store.dispose();
  });

  function consumerOf(
    node: RabbitmqNode | undefined,
    queue: string,
    s: ContractConsumerSettings,
    queueArguments: Readonly<Record<string, unknown>>,
    mode: 'message' | 'batch',
  ): RabbitConsumer {
    const { extract, fallback } = s.messageId;
    const consumer = createRabbitConsumer({
      ...(node === undefined ? { url: amqpUrl() } : { url: node.url, ...LIMITS }),
      queue,
      queueArguments,
      mode,
      inbox: s.inbox,
      handler: s.handler,
      onSettled: s.onSettled,
      messageId: {
        fallback,
        ...(extract === undefined
          ? {}
          : { extract: (m: ConsumeMessage) => extract(m.content.toString('utf8')) }),
      },
      ...(s.concurrency === undefined ? {} : { concurrency: s.concurrency }),
      ...(s.resilience === undefined ? {} : { resilience: s.resilience }),
      ...(s.logger === undefined ? {} : { logger: s.logger }),
    });
    // A private node's topology goes with the node.
    if (node === undefined) created.push(consumer);
    return consumer;
  }

  const quorum = { 'x-queue-type': 'quorum' };
  it.each<
    [string, Readonly<Record<string, unknown>>, 'message' | 'batch', ConsumerFeatures, boolean]
  >([
    // One queue hands its messages to every free handler: no order by key to declare.
    [
      'a classic queue, message mode, restarted and cut off (private node)',
      {},
      'message',
      {},
      true,
    ],
    // `receiveCount` is the broker's `x-delivery-count` of one copy; a retry goes out as a new
    // copy through a retry queue, so the count starts again and does not grow 1, 2, 3.
    ['a quorum queue, message mode', quorum, 'message', {}, false],
    ['a classic queue, batch mode', {}, 'batch', { batchMode: true }, false],
    ['a quorum queue, batch mode', quorum, 'batch', { batchMode: true }, false],
  ])('passes every clause on %s', async (_, queueArguments, mode, features, faults) => {
    let node: RabbitmqNode | undefined;
    let channel = admin.channel;
    const closers: Array<() => Promise<unknown>> = [];
    if (faults) {
      // A partition that cannot be played is a failure with the reason, never a skip.
      const unavailable = await partitionUnavailable();
      if (unavailable !== undefined) throw new Error(`cannot cut the network: ${unavailable}`);
      node = await startPrivateRabbitmq(60_000);
      const own = node;
      closers.push(() => own.dispose());
      const connection = await connect(node.url);
      connection.on('error', () => undefined);
      closers.push(() => connection.close());
      channel = await connection.createChannel();
      channel.on('error', () => undefined);
    }
    try {
      const own = node;
      const checks = await checkConsumerContract({
        store,
        newDestination: async () => uniqueName('contract'),
        send: async (queue, messages) => sendTo(channel, queue, messages),
        createConsumer: (queue, settings) => consumerOf(own, queue, settings, queueArguments, mode),
        ...(own === undefined
          ? {}
          : {
              createPublisher: (logger: Logger) =>
                createRabbitPublisher({ url: own.url, logger, ...LIMITS }),
            }),
        features: { ...features, ...(own === undefined ? {} : faultFeatures(own)) },
      });
      for (const c of checks) {
        if (c.figures) console.log(JSON.stringify({ clause: c.clause, ...c.figures }));
      }
      expect(checks.map((c) => c.clause)).toEqual(Object.values(CONSUMER_CONTRACT_CLAUSES));
      expect(failures(checks)).toEqual([]);
      expect(checks.filter((c) => c.skipped !== undefined).length).toBe(faults ? 0 : 2);
    } finally {
      for (const close of closers.reverse()) await close().catch(() => undefined);
    }
  });
});
