import type { Admin, Kafka, Producer } from 'kafkajs';
import { createDeadLetters, type InboxDedupMode } from '@justonce/core';
import { DEAD_LETTER_HEADERS } from '../src';
import { databaseUrl } from '../../core/test/db';
import {
  FAST_GROUP,
  createTopics,
  kafkaBrokers,
  produce,
  readTopic,
  unique,
  connectKafkaClients,
  type KafkaClients,
} from './support';
import { waitFor } from '../../../test-support/wait-for';
import { killCrashChildren, spawnCrashChild } from '../../../test-support/crash-child';
import { openEffectsStore, type EffectsStore } from '../../../test-support/effects';

const MAX_ATTEMPTS = 2;

/** The crashes of the counted deliveries: attempts 1 to {@link MAX_ATTEMPTS}, none first. */
const countedCrashes = (): Array<{ attempt: number; first: boolean }> =>
  Array.from({ length: MAX_ATTEMPTS }, (_, i) => ({ attempt: i + 1, first: false }));
const BATCH_SIZE = 5;

let kafka: Kafka;
let admin: Admin;
let producer: Producer;
let clients: KafkaClients;

beforeAll(async () => {
  clients = await connectKafkaClients();
  ({ kafka, admin, producer } = clients);
});

afterEach(async () => {
  await killCrashChildren();
});

afterAll(async () => {
  await clients.close();
});

/** A new one-partition topic named after `label`, its `.dlq` topic, and new group and consumer names. */
async function freshNames(
  label: string,
): Promise<{ topic: string; groupId: string; name: string }> {
  const topic = unique(label);
  await createTopics(admin, [topic, `${topic}.dlq`], 1);
  return { topic, groupId: unique('g'), name: unique('c') };
}

interface PoisonRun {
  readonly schema: string;
  readonly topic: string;
  readonly groupId: string;
  readonly name: string;
  readonly mode: 'batch' | 'message';
  /** The inbox's `maxAttempts`; default {@link MAX_ATTEMPTS}. */
  readonly maxAttempts?: number;
  /** The inbox's dedup mode; default `ids`. */
  readonly dedup?: InboxDedupMode;
}

/**
 * Runs consumer processes one after another, each killed with SIGKILL when its handler meets
 * the poison, until one dead-letters it; returns the attempts the crashes reported and the
 * attempt the dead letter was sent at.
 */
async function crashUntilDeadLettered(
  run: PoisonRun,
): Promise<{ crashes: Array<{ attempt: number; first: boolean }>; deadLettered: number }> {
  const crashes: Array<{ attempt: number; first: boolean }> = [];
  for (let runs = 0; ; runs++) {
    const maxAttempts = run.maxAttempts ?? MAX_ATTEMPTS;
    if (runs > maxAttempts + 2) throw new Error(`not dead-lettered: ${JSON.stringify(crashes)}`);
    const child = spawnCrashChild({
      databaseUrl: databaseUrl(),
      schema: run.schema,
      consumer: run.name,
      maxAttempts,
      ...(run.dedup === undefined ? {} : { dedup: run.dedup }),
      stopInHandlerOn: 'poison',
      transport: {
        kind: 'kafka',
        options: {
          brokers: kafkaBrokers(),
          groupId: run.groupId,
          topics: [run.topic],
          fromBeginning: true,
          mode: run.mode,
          batchSize: BATCH_SIZE,
          consumerConfig: FAST_GROUP,
        },
      },
    });
    // The child either meets the poison in its handler (and hangs there until killed) or
    // dead-letters it and goes on; that one stays running until the test's cleanup.
    const seen = await child.next(['stopped', 'dead-lettered']);
    if (seen.type === 'dead-lettered') return { crashes, deadLettered: seen.attempt };
    crashes.push({ attempt: seen.attempt!, first: seen.first! });
    expect(await child.kill()).toBe('SIGKILL');
  }
}

describe('a record whose handler kills the process on every delivery', () => {
  it.each(['batch', 'message'] as const)(
    'in %s mode is dead-lettered after at most maxAttempts + 1 attempts, and its partition moves on',
    async (mode) => {
      const store = await openEffectsStore();
      try {
        const { topic, groupId, name } = await freshNames('crash-poison');
        // Two full chunks before the poison: the first is counted (the first chunk after an
        // assignment always is), the second is committed, so the poison arrives declared as
        // a first delivery, alone in its chunk.
        const good = (from: number, n: number) =>
          Array.from({ length: n }, (_, i) => ({
            value: `ok-${from + i}`,
            headers: { 'message-id': `${name}-${from + i}` },
          }));
        await produce(producer, topic, [
          ...good(0, 2 * BATCH_SIZE),
          { value: 'poison', headers: { 'message-id': `${name}-poison` } },
        ]);

        const { crashes, deadLettered } = await crashUntilDeadLettered({
          schema: store.schema,
          topic,
          groupId,
          name,
          mode,
        });

        // The first delivery was declared first and not counted; every later one was counted
        // from 1, so the handler ran maxAttempts + 1 times and the attempt numbers never jumped.
        expect(crashes.length).toBeLessThanOrEqual(MAX_ATTEMPTS + 1);
        expect(crashes).toEqual([{ attempt: 1, first: true }, ...countedCrashes()]);
        expect(deadLettered).toBe(MAX_ATTEMPTS + 1);
        const [letter] = await readTopic(kafka, `${topic}.dlq`, 1);
        expect(letter?.value).toBe('poison');
        expect(letter?.headers[DEAD_LETTER_HEADERS.reason]).toBe('MAX_ATTEMPTS');
        expect(letter?.headers[DEAD_LETTER_HEADERS.messageId]).toBe(`${name}-poison`);
        expect(letter?.headers[DEAD_LETTER_HEADERS.source]).toBe(topic);

        // The partition moves on: records after the poison take effect and are committed.
        await produce(producer, topic, good(100, 3));
        const end = String(2 * BATCH_SIZE + 4);
        await waitFor(
          `the committed offset to reach ${end}`,
          async () => {
            const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
            return committed!.partitions[0]!.offset === end;
          },
          { timeoutMs: 30_000, intervalMs: 100 },
        );
        const counts = await store.effectCounts();
        expect(counts.size).toBe(2 * BATCH_SIZE + 3);
        expect([...counts.values()].every((n) => n === 1)).toBe(true);
        expect(counts.has(`${name}-poison`)).toBe(false);
      } finally {
        await store.dispose();
      }
    },
    120_000,
  );
  it.each(['ids', 'watermark'] as const)(
    'in batch mode with dedup %s, in the middle of a counted chunk, takes only itself to the dead letters',
    async (dedup) => {
      const store = await openEffectsStore();
      try {
        const { topic, groupId, name } = await freshNames('crash-poison-mid');
        // One chunk, the first after the assignment (so every record in it is counted), with
        // the poison between two records on each side.
        const record = (label: string) => ({
          value: label === 'poison' ? 'poison' : `ok-${label}`,
          headers: { 'message-id': `${name}-${label}` },
        });
        const labels = ['0', '1', 'poison', '3', '4'];
        expect(labels).toHaveLength(BATCH_SIZE);
        await produce(producer, topic, labels.map(record));

        const { crashes, deadLettered } = await crashUntilDeadLettered({
          schema: store.schema,
          topic,
          groupId,
          name,
          mode: 'batch',
          dedup,
        });

        // The first delivery ran the chunk in one transaction and died in it. Every later
        // delivery ran one record per transaction, each counted just before it ran: the chunk's
        // shared count became each record's own attempt 1, so the records before the poison
        // committed on the second delivery, and the records after it were not charged for the
        // poison's crashes; the poison itself ran once more as attempt 1.
        expect(crashes).toEqual([{ attempt: 1, first: false }, ...countedCrashes()]);
        expect(deadLettered).toBe(MAX_ATTEMPTS + 1);
        await waitFor(
          `the committed offset to reach ${BATCH_SIZE}`,
          async () => {
            const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
            return committed!.partitions[0]!.offset === String(BATCH_SIZE);
          },
          { timeoutMs: 30_000, intervalMs: 100 },
        );
        const counts = await store.effectCounts();
        expect([...counts.keys()].sort()).toEqual(
          ['0', '1', '3', '4'].map((label) => `${name}-${label}`).sort(),
        );
        expect([...counts.values()].every((n) => n === 1)).toBe(true);
        await expectOnlyPoisonDeadLettered(store, topic, name);
      } finally {
        await store.dispose();
      }
    },
    120_000,
  );

  it('in batch mode, in the middle of a declared chunk, takes only itself to the dead letters', async () => {
    const store = await openEffectsStore();
    try {
      const { topic, groupId, name } = await freshNames('crash-poison-declared');
      // A full chunk before (counted, then committed), so the chunk with the poison is
      // declared a first delivery: its first crash leaves no counter at all. Then records
      // after the poison in its chunk, and a chunk after that.
      const record = (label: string) => ({
        value: label === 'poison' ? 'poison' : `ok-${label}`,
        headers: { 'message-id': `${name}-${label}` },
      });
      const labels = ['0', '1', '2', '3', '4', '5', '6', 'poison', '8', '9', '10', '11', '12'];
      await produce(producer, topic, labels.map(record));

      const { crashes, deadLettered } = await crashUntilDeadLettered({
        schema: store.schema,
        topic,
        groupId,
        name,
        mode: 'batch',
      });

      // Uncounted on the declared delivery; then the chunk came back counted as a whole
      // (attempt 1, shared) and died again; from then on one record per transaction, the
      // shared count becoming each record's own attempt 1.
      expect(crashes).toEqual([
        { attempt: 1, first: true },
        { attempt: 1, first: false },
        ...countedCrashes(),
      ]);
      expect(deadLettered).toBe(MAX_ATTEMPTS + 1);
      await waitFor(
        `the committed offset to reach ${labels.length}`,
        async () => {
          const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
          return committed!.partitions[0]!.offset === String(labels.length);
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      const counts = await store.effectCounts();
      expect([...counts.keys()].sort()).toEqual(
        labels
          .filter((l) => l !== 'poison')
          .map((label) => `${name}-${label}`)
          .sort(),
      );
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
      await expectOnlyPoisonDeadLettered(store, topic, name);
    } finally {
      await store.dispose();
    }
  }, 120_000);
});

describe('a crash in a counted chunk with maxAttempts 1', () => {
  // The chunk was counted as a whole before it ran, so every record in it holds a counter
  // after the crash; that count is the batch's (shared), and each record's count on its own
  // makes it its own instead of charging it a second attempt for its batch-mate's crash.
  it('with maxAttempts 1, a crash in a counted chunk takes only the poison to the dead letters', async () => {
    const store = await openEffectsStore();
    try {
      const { topic, groupId, name } = await freshNames('crash-poison-one');
      const labels = ['0', '1', 'poison', '3', '4'];
      await produce(
        producer,
        topic,
        labels.map((label) => ({
          value: label === 'poison' ? 'poison' : `ok-${label}`,
          headers: { 'message-id': `${name}-${label}` },
        })),
      );
      await crashUntilDeadLettered({
        schema: store.schema,
        topic,
        groupId,
        name,
        mode: 'batch',
        maxAttempts: 1,
      });
      await waitFor(
        `the committed offset to reach ${labels.length}`,
        async () => {
          const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
          return committed!.partitions[0]!.offset === String(labels.length);
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      const letters = await createDeadLetters(store).list({ consumer: name });
      expect(letters.map((l) => l.messageId)).toEqual([`${name}-poison`]);
    } finally {
      await store.dispose();
    }
  }, 60_000);
});

/** Only the poison is dead-lettered: one record in the dead-letter topic, one letter in the store. */
async function expectOnlyPoisonDeadLettered(
  store: EffectsStore,
  topic: string,
  name: string,
): Promise<void> {
  const [letter] = await readTopic(kafka, `${topic}.dlq`, 1);
  expect(letter?.value).toBe('poison');
  expect(letter?.headers[DEAD_LETTER_HEADERS.reason]).toBe('MAX_ATTEMPTS');
  const [end] = await admin.fetchTopicOffsets(`${topic}.dlq`);
  expect(end!.high).toBe('1');
  const letters = await createDeadLetters(store).list({ consumer: name });
  expect(letters.map((l) => [l.messageId, l.reason])).toEqual([[`${name}-poison`, 'MAX_ATTEMPTS']]);
  const left = (await store.knex.raw(
    `select count(*)::int as n from ${store.names.table('inbox_attempts')} where consumer = ?`,
    [name],
  )) as { rows: Array<{ n: number }> };
  expect(left.rows[0]!.n).toBe(0);
}
