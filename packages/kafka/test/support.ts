import { randomBytes } from 'node:crypto';
import {
  createInbox,
  createRelay,
  rowsOf,
  type Logger,
  type Relay,
  type Store,
} from '@justonce/core';
import type { Knex } from 'knex';
import { kafkaBrokers } from '../../../test-support/services';
import { waitFor } from '../../../test-support/wait-for';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import {
  createKafkaConsumer,
  createKafkaPublisher,
  type KafkaClient,
  type KafkaClientName,
  type KafkaConsumer,
  type KafkaPublisher,
} from '../src';
import { buildKafkaClient } from '../src/client/built-client';
import { loadPlatformaticKafka } from '../src/client/platformatic/load';
import { FAST_GROUP } from './fast-group';
import { createTopics } from './topics';
import { useTestBed } from '../../../test-support/test-bed';
import { openEffectsStore, type EffectsStore } from '../../../test-support/effects';

export { kafkaBrokers, FAST_GROUP, createTopics };
// The shared effects table, re-exported for the tests that import it from here.
export { openEffectsStore, type EffectsStore };

/** A kafkajs client for tests, quiet except for errors. */
export function testKafka(clientId = 'justonce-test'): Kafka {
  return new Kafka({ clientId, brokers: kafkaBrokers(), logLevel: logLevel.NOTHING });
}

/**
 * The clients the suites that matter run against (`describe.each(CLIENTS)`): the consumer
 * and publisher contracts, the crash, rebalance, restart and partition tests.
 */
export const CLIENTS: readonly KafkaClientName[] = ['kafkajs', 'platformatic'];

// Jest links @platformatic/kafka's hundreds of ES modules in 3–5 s on a busy machine (plain
// Node takes a tenth of a second): loaded once before each file's tests, so that the first
// connect of a test is not charged for it (the publisher's send limit includes the connect).
beforeAll(() => loadPlatformaticKafka(), 60_000);

/**
 * The client under test, on the shared broker (or `brokers`): for kafkajs the test's own
 * `Kafka` instance when one is given (quiet, as the tests always had it), else the client
 * justonce builds for `client`.
 */
export function clientUnderTest(
  client: KafkaClientName,
  options: { kafka?: Kafka; brokers?: string[]; clientId?: string } = {},
): KafkaClient {
  if (client === 'kafkajs' && options.kafka !== undefined) return options.kafka;
  return buildKafkaClient(client, {
    brokers: options.brokers ?? kafkaBrokers(),
    clientId: options.clientId ?? 'justonce-test',
  });
}

/** A unique topic, group or consumer name. */
export function unique(label: string): string {
  return `jo-${label}-${randomBytes(4).toString('hex')}`;
}

/** A record to produce in tests. */
export interface TestRecord {
  key?: string;
  value: string | Buffer | null;
  headers?: Record<string, string>;
  partition?: number;
}

/** Produces records to one topic with acks from all replicas. */
export async function produce(
  producer: Producer,
  topic: string,
  records: TestRecord[],
): Promise<void> {
  await producer.send({ topic, acks: -1, messages: records.map((r) => ({ ...r })) });
}

/** Reads every record of a topic from the beginning until `count` have arrived (bounded). */
export async function readTopic(
  kafka: Kafka,
  topic: string,
  count: number,
  timeoutMs = 30_000,
): Promise<
  Array<{
    key: string | null;
    value: string | null;
    headers: Record<string, string>;
    partition: number;
  }>
> {
  const consumer = kafka.consumer({ groupId: unique('reader'), ...FAST_GROUP });
  const out: Array<{
    key: string | null;
    value: string | null;
    headers: Record<string, string>;
    partition: number;
  }> = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message, partition }) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(message.headers ?? {})) {
          if (v !== undefined) headers[k] = Array.isArray(v) ? String(v[v.length - 1]) : String(v);
        }
        out.push({
          key: message.key?.toString() ?? null,
          value: message.value?.toString() ?? null,
          headers,
          partition,
        });
      },
    });
    await waitFor(`${count} records on ${topic} (got ${out.length})`, () => out.length >= count, {
      timeoutMs,
      intervalMs: 100,
    });
    return out;
  } finally {
    await consumer.disconnect();
  }
}

/** A test's Kafka client with a connected admin and producer; `close` disconnects both. */
export interface KafkaClients {
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly producer: Producer;
  close(): Promise<void>;
}

/** Connects an admin and a producer on a new test client. */
export async function connectKafkaClients(): Promise<KafkaClients> {
  const kafka = testKafka();
  const admin = kafka.admin();
  const producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  return {
    kafka,
    admin,
    producer,
    close: async () => {
      await Promise.all([admin.disconnect(), producer.disconnect()]);
    },
  };
}

/** What {@link useKafkaTestBed} opens for a test file. */
export interface KafkaTestBed {
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly producer: Producer;
  /** A store with the shared effects table. */
  readonly store: EffectsStore;
  /** Consumers to stop after each test. */
  readonly running: KafkaConsumer[];
}

/**
 * Connects Kafka clients and opens an effects store before a test file's tests, stops the
 * consumers pushed onto `running` after each test, and closes both after them all. Read the
 * fields inside hooks and tests.
 */
export function useKafkaTestBed(): KafkaTestBed {
  let clients: KafkaClients;
  return useTestBed<KafkaTestBed>({
    open: async () => {
      clients = await connectKafkaClients();
      const { kafka, admin, producer } = clients;
      return { kafka, admin, producer, store: await openEffectsStore(), running: [] };
    },
    afterEachTest: async ({ running }) => {
      await Promise.all(running.splice(0).map((c) => c.stop()));
    },
    close: async ({ store }) => {
      await clients.close();
      await store.dispose();
    },
  });
}

/**
 * The options a test consumer shares with most others: a fresh group on `topics`, read from
 * the beginning, with {@link FAST_GROUP}'s timings.
 */
export function freshGroup(
  kafka: Kafka,
  topics: string[],
): {
  kafka: Kafka;
  groupId: string;
  topics: string[];
  fromBeginning: true;
  consumerConfig: typeof FAST_GROUP;
} {
  return { kafka, groupId: unique('g'), topics, fromBeginning: true, consumerConfig: FAST_GROUP };
}

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

/** The `n` a counting query returns. */
export async function countOf(
  store: Store,
  sql: string,
  bindings: readonly Knex.RawBinding[] = [],
): Promise<number> {
  return Number(rowsOf<{ n: number | string }>(await store.knex.raw(sql, bindings))[0]?.n ?? 0);
}

/** A logger that counts lines by message (and keeps the errors' texts), for a test's figures. */
export function countingLogger(): {
  logger: Logger;
  counts: Map<string, number>;
  errors: string[];
} {
  const counts = new Map<string, number>();
  const errors: string[] = [];
  const at = (message: string, fields?: Readonly<Record<string, unknown>>): void => {
    counts.set(message, (counts.get(message) ?? 0) + 1);
    if (typeof fields?.error === 'string') errors.push(fields.error);
  };
  return { logger: { debug: at, info: at, warn: at, error: at }, counts, errors };
}

/** The relay of the PostgreSQL fault tests: quick polls, short backoff, events kept for checks. */
export function faultRelay(
  store: Store,
  kafka: KafkaClient,
  logger: Logger,
  batchSize = 50,
): { relay: Relay; publisher: KafkaPublisher } {
  const publisher = createKafkaPublisher({ kafka });
  const relay = createRelay({
    store,
    publisher,
    batchSize,
    pollIntervalMs: 100,
    backoff: { baseMs: 50, capMs: 500 },
    onPublished: 'keep',
    logger,
  });
  return { relay, publisher };
}

/** What a {@link faultConsumer} saw: dead letters, and when each message was processed. */
export interface FaultConsumerTally {
  deadLettered: number;
  readonly processedAt: number[];
}

/**
 * The consumer of the PostgreSQL fault tests: a fast group on `topic`, an inbox named
 * `consumer`, and a handler that writes one row per message into `effects`
 * (`message_id` and the value `row` gives).
 */
export function faultConsumer(options: {
  readonly kafka: KafkaClient;
  readonly store: Store;
  readonly topic: string;
  readonly groupId: string;
  readonly consumer: string;
  readonly maxAttempts: number;
  readonly batchSize: number;
  readonly logger: Logger;
  readonly inboxLogger?: Logger;
  readonly insert: string;
  readonly row: (body: Uint8Array | string) => string | number;
}): { consumer: KafkaConsumer; tally: FaultConsumerTally } {
  const tally: FaultConsumerTally = { deadLettered: 0, processedAt: [] };
  const consumer = createKafkaConsumer({
    kafka: options.kafka,
    groupId: options.groupId,
    topics: [options.topic],
    fromBeginning: true,
    consumerConfig: FAST_GROUP,
    batchSize: options.batchSize,
    logger: options.logger,
    inbox: createInbox({
      store: options.store,
      consumer: options.consumer,
      maxAttempts: options.maxAttempts,
      logger: options.inboxLogger ?? options.logger,
    }),
    handler: async (ctx) => {
      await ctx.trx.raw(options.insert, [ctx.messageId, options.row(ctx.message.body)]);
    },
    onSettled: ({ outcome }) => {
      if (outcome?.status === 'dead-lettered') tally.deadLettered++;
      if (outcome?.status === 'processed') tally.processedAt.push(Date.now());
    },
  });
  return { consumer, tally };
}
