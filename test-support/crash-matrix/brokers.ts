/**
 * The parent's side of each broker in the crash-point matrix: make a fresh topic or queue
 * for a cell, publish to it, tell the child how to consume it, and say when it is drained.
 * The memory transport's broker state lives here, in the parent, so that it survives the
 * child's SIGKILL: the child gets the copies not yet acknowledged.
 */
import { randomBytes } from 'node:crypto';
import {
  GetQueueAttributesCommand,
  SQSClient,
  CreateQueueCommand,
  DeleteQueueCommand,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { connect, type Channel, type ChannelModel } from 'amqplib';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import type { CrashTransport } from '../crash-child';
import { amqpUrl, kafkaBrokers, sqsClientConfig } from '../services';
import { FAST_GROUP } from '../../packages/kafka/test/fast-group';
import { createTopics } from '../../packages/kafka/test/topics';
import type { BrokerTransport, MatrixMode } from './cells';

/** Messages per batch in batch mode (and per relay batch). */
export const BATCH_SIZE = 5;

/** One cell's topic or queue. */
export interface Route {
  /** Where a relay publishes to reach it: a topic, queue URL or queue name. */
  readonly destination: string;
  /** Publishes one copy of each message, its id as the message id. */
  publish(ids: readonly string[]): Promise<void>;
  /** How a child consumes it in `mode` (`message` unless `batch`). */
  transport(consumer: string, mode: MatrixMode): CrashTransport;
  /** A child reported that it acknowledged a copy of `messageId`. */
  acked(messageId: string): void;
  /** Nothing is left to deliver (every copy acknowledged). */
  drained(): Promise<boolean>;
  /** Deletes the topic or queue. */
  dispose(): Promise<void>;
}

/** The brokers of one matrix run: clients opened once, a route per cell. */
export interface Brokers {
  open(transport: BrokerTransport): Promise<Route>;
  close(): Promise<void>;
}

/**
 * Runs a Kafka admin or producer call again (up to 5 times, 1 s apart) when it fails: a busy
 * broker answers a topic just made with "does not host this topic-partition" for a while.
 * The cell is about the consumer's crash, not about the parent's own calls.
 */
async function patiently<T>(call: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries += 1) {
    try {
      return await call();
    } catch (error) {
      if (tries >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

function unique(label: string): string {
  return `jo-matrix-${label}-${randomBytes(4).toString('hex')}`;
}

/** Connects what the cells need, lazily: a run of memory cells opens no broker client. */
export function openBrokers(): Brokers {
  let kafka: Promise<{ admin: Admin; producer: Producer }> | undefined;
  let sqs: SQSClient | undefined;
  let amqp: Promise<{ model: ChannelModel; channel: Channel }> | undefined;
  return {
    open(transport) {
      switch (transport) {
        case 'kafka':
          kafka ??= connectKafka();
          return kafka.then(kafkaRoute);
        case 'sqs':
          sqs ??= new SQSClient(sqsClientConfig());
          return sqsRoute(sqs);
        case 'rabbitmq':
          amqp ??= connectAmqp();
          return amqp.then(({ channel }) => rabbitRoute(channel));
        case 'memory':
          return Promise.resolve(memoryRoute());
      }
    },
    async close() {
      if (kafka) {
        const { admin, producer } = await kafka;
        await Promise.all([admin.disconnect(), producer.disconnect()]);
      }
      sqs?.destroy();
      if (amqp) await (await amqp).model.close().catch(() => undefined);
    },
  };
}

async function connectKafka(): Promise<{ admin: Admin; producer: Producer }> {
  const kafka = new Kafka({
    clientId: 'crash-matrix',
    brokers: kafkaBrokers(),
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  const producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  return { admin, producer };
}

async function connectAmqp(): Promise<{ model: ChannelModel; channel: Channel }> {
  const model = await connect(amqpUrl());
  model.on('error', () => undefined);
  return { model, channel: await model.createChannel() };
}

async function kafkaRoute({ admin, producer }: { admin: Admin; producer: Producer }) {
  const topic = unique('t');
  const groupId = unique('g');
  await patiently(() => createTopics(admin, [topic], 1));
  return {
    destination: topic,
    async publish(ids) {
      const messages = ids.map((id) => ({ key: id, value: id, headers: { 'message-id': id } }));
      await patiently(() => producer.send({ topic, acks: -1, messages }));
    },
    transport: (_consumer, mode) => ({
      kind: 'kafka',
      options: {
        brokers: kafkaBrokers(),
        groupId,
        topics: [topic],
        fromBeginning: true,
        mode: mode === 'batch' ? 'batch' : 'message',
        batchSize: BATCH_SIZE,
        consumerConfig: FAST_GROUP,
      },
    }),
    acked: () => undefined,
    async drained() {
      const [ends, committed] = await patiently(() =>
        Promise.all([
          admin.fetchTopicOffsets(topic),
          admin.fetchOffsets({ groupId, topics: [topic] }),
        ]),
      );
      const offsets = committed[0]?.partitions ?? [];
      return ends.every((e) => offsets.find((p) => p.partition === e.partition)?.offset === e.high);
    },
    async dispose() {
      await admin.deleteGroups([groupId]).catch(() => undefined);
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    },
  } satisfies Route;
}

async function sqsRoute(sqs: SQSClient): Promise<Route> {
  const { QueueUrl: queueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: unique('q'), Attributes: { VisibilityTimeout: '2' } }),
  );
  if (queueUrl === undefined) throw new Error('no URL for the queue');
  return {
    destination: queueUrl,
    async publish(ids) {
      for (let i = 0; i < ids.length; i += 10) {
        const entries = ids.slice(i, i + 10).map((id, j) => ({
          Id: `e${j}`,
          MessageBody: id,
          MessageAttributes: { 'message-id': { DataType: 'String', StringValue: id } },
        }));
        const sent = await sqs.send(
          new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }),
        );
        if (sent.Failed?.length) throw new Error(`send failed: ${JSON.stringify(sent.Failed)}`);
      }
    },
    transport: (_consumer, mode) => ({
      kind: 'sqs',
      options: {
        clientConfig: sqsClientConfig(),
        queueUrl,
        concurrency: 2,
        waitTimeSeconds: 1,
        visibilityTimeoutSeconds: 2,
        mode: mode === 'batch' ? 'batch' : 'message',
      },
    }),
    acked: () => undefined,
    async drained() {
      const { Attributes = {} } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: queueUrl,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return (
        Number(Attributes['ApproximateNumberOfMessages'] ?? 1) === 0 &&
        Number(Attributes['ApproximateNumberOfMessagesNotVisible'] ?? 1) === 0
      );
    },
    async dispose() {
      await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => undefined);
    },
  };
}

async function rabbitRoute(channel: Channel): Promise<Route> {
  const queue = unique('q');
  await channel.assertQueue(queue, { durable: true });
  // Unacknowledged deliveries do not show in the queue's count: the children's reports do.
  let published = 0;
  let acked = 0;
  return {
    destination: queue,
    async publish(ids) {
      for (const id of ids) {
        channel.sendToQueue(queue, Buffer.from(id), { messageId: id, persistent: true });
      }
      published += ids.length;
      await channel.checkQueue(queue);
    },
    transport: (_consumer, mode) => ({
      kind: 'rabbitmq',
      options:
        mode === 'batch'
          ? { url: amqpUrl(), queue, mode, batchSize: BATCH_SIZE, batchWaitMs: 50, prefetch: 10 }
          : { url: amqpUrl(), queue, mode: 'message' },
    }),
    acked: () => void (acked += 1),
    async drained() {
      return acked >= published && (await channel.checkQueue(queue)).messageCount === 0;
    },
    async dispose() {
      await channel.deleteQueue(queue).catch(() => undefined);
      await channel.deleteQueue(`${queue}.dead`).catch(() => undefined);
      await channel.deleteExchange(`${queue}.dlx`).catch(() => undefined);
    },
  };
}

/** The memory broker's state, kept here: the copies of each message not yet acknowledged. */
function memoryRoute(): Route {
  const copies = new Map<string, number>();
  return {
    destination: 'matrix',
    async publish(ids) {
      for (const id of ids) copies.set(id, (copies.get(id) ?? 0) + 1);
    },
    transport: (_consumer, mode) => ({
      kind: 'memory',
      mode: mode === 'batch' ? 'batch' : 'message',
      batchSize: BATCH_SIZE,
      messages: [...copies].flatMap(([id, n]) =>
        Array.from({ length: n }, () => ({ id, body: id })),
      ),
    }),
    acked(messageId) {
      const left = (copies.get(messageId) ?? 0) - 1;
      if (left > 0) copies.set(messageId, left);
      else copies.delete(messageId);
    },
    drained: () => Promise.resolve(copies.size === 0),
    dispose: () => Promise.resolve(),
  };
}
