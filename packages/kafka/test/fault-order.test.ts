import type { Admin, Kafka, Producer } from 'kafkajs';
import { createDeadLetters, type SettledEvent } from '@justonce/core';
import { createKafkaConsumer, DEAD_LETTER_HEADERS, type KafkaConsumer } from '../src';
import {
  FAST_GROUP,
  connectKafkaClients,
  createTopics,
  openEffectsStore,
  readTopic,
  unique,
  type KafkaClients,
} from './support';
import {
  NUL_TEXT,
  conflictingDelivery,
  faultOrderHandler,
  faultOrderInbox,
  faultyDeliveries,
  winnerOf,
  type FaultyDelivery,
} from '../../../test-support/fault-order';
import { waitFor } from '../../../test-support/wait-for';

/**
 * docs/bad-input.md, "Which fault wins", on the real broker: records with two and three
 * faults at once (U+0000 in the id, the tenant or a header; a body the inbox's JSON `decode`
 * refuses; an unknown `type`; a payload the schema refuses; an id handled before with
 * another payload) each reach the dead-letter topic and the store under the documented
 * winner, in message and in batch mode.
 */

type EffectsStore = Awaited<ReturnType<typeof openEffectsStore>>;

/** The header that tells the test's records apart (the values repeat). */
const CASE = 'x-case';

let kafka: Kafka;
let admin: Admin;
let producer: Producer;
let clients: KafkaClients;
let store: EffectsStore;
const running: KafkaConsumer[] = [];

beforeAll(async () => {
  clients = await connectKafkaClients();
  ({ kafka, admin, producer } = clients);
  store = await openEffectsStore();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop()));
});

afterAll(async () => {
  await clients.close();
  await store.dispose();
});

async function send(topic: string, deliveries: readonly FaultyDelivery[], from: number) {
  await producer.send({
    topic,
    acks: -1,
    messages: deliveries.map((d, i) => ({
      value: d.body,
      headers: {
        ...(d.id === undefined ? {} : { 'message-id': d.id }),
        ...d.headers,
        [CASE]: String(from + i),
      },
    })),
  });
}

describe.each(['message', 'batch'] as const)('which fault wins on Kafka, %s mode', (mode) => {
  it('dead-letters each record with several faults under the documented winner', async () => {
    const topic = unique('faults');
    const dlq = `${topic}.dlq`;
    const name = unique('c');
    const tag = name.slice(-8);
    await createTopics(admin, [topic, dlq], 1);
    const first = faultyDeliveries(tag, NUL_TEXT);
    const all = [...first, conflictingDelivery(tag, NUL_TEXT)];
    const bad = all.filter((d) => d.faults.length > 0);

    const settled: SettledEvent[] = [];
    const consumer = createKafkaConsumer({
      kafka,
      groupId: unique('g'),
      topics: [topic],
      fromBeginning: true,
      consumerConfig: FAST_GROUP,
      mode,
      batchSize: 4,
      messageId: { fallback: false },
      inbox: faultOrderInbox(store, name),
      handler: faultOrderHandler(store, name),
      onSettled: (event) => void settled.push(event),
    });
    running.push(consumer);
    await consumer.start();

    await send(topic, first, 0);
    await waitFor('the first records settled', () => settled.length >= first.length, {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    // The good record's id again, with another payload: sent once the good one is handled.
    await send(topic, all.slice(first.length), first.length);

    const letters = await readTopic(kafka, dlq, bad.length);
    expect(letters).toHaveLength(bad.length);
    const stored = await createDeadLetters(store).list({ consumer: name });
    expect(stored).toHaveLength(bad.length);
    const seen = all.map((d, i) => {
      const copy = letters.find((l) => l.headers[CASE] === String(i));
      const letter = stored.find((l) => l.headers[CASE] === String(i));
      return [d.label, copy?.headers[DEAD_LETTER_HEADERS.reason], letter?.reason];
    });
    const expected = all.map((d) => {
      const winner = d.faults.length === 0 ? undefined : winnerOf(d.faults);
      return [d.label, winner, winner];
    });
    expect(seen).toEqual(expected);
    expect(await store.effectCounts(name)).toEqual(new Map([[`good-${tag}`, 1]]));
  });
});
