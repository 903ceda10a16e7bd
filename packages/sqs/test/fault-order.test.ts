import type { Message } from '@aws-sdk/client-sqs';
import { createDeadLetters, DEAD_LETTER_HEADERS, type SettledEvent } from '@justonce/core';
import { createSqsConsumer, type SqsConsumer } from '../src';
import {
  TestQueues,
  openEffectsStore,
  sqsClientConfig,
  unique,
  type EffectsStore,
} from './support';
import {
  LONG_TEXT,
  conflictingDelivery,
  faultOrderHandler,
  faultOrderInbox,
  faultyDeliveries,
  winnerOf,
  type FaultyDelivery,
} from '../../../test-support/fault-order';
import { waitFor } from '../../../test-support/wait-for';

/**
 * docs/bad-input.md, "Which fault wins", on ElasticMQ: messages with two and three faults at
 * once each reach the dead-letter queue and the store under the documented winner, in
 * message and in batch mode. SQS refuses U+0000 in attributes, so the id and the tenant are
 * made too long to be one instead, and no header can fail (see bad-input.test.ts).
 */

/** The attribute that tells the test's messages apart (the bodies repeat). */
const CASE = 'x-case';

let store: EffectsStore;
let queues: TestQueues;
const consumers: SqsConsumer[] = [];

beforeAll(async () => {
  store = await openEffectsStore();
  queues = new TestQueues();
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.stop({ timeoutMs: 5_000 })));
});

afterAll(async () => {
  await queues.dispose();
  await store.dispose();
});

async function send(queueUrl: string, deliveries: readonly FaultyDelivery[], from: number) {
  await queues.send(
    queueUrl,
    deliveries.map((d, i) => ({
      body: d.body,
      attributes: {
        ...(d.id === undefined ? {} : { 'message-id': d.id }),
        ...d.headers,
        [CASE]: String(from + i),
      },
    })),
  );
}

function attribute(message: Message | undefined, name: string): string | undefined {
  return message?.MessageAttributes?.[name]?.StringValue;
}

describe.each(['message', 'batch'] as const)('which fault wins on SQS, %s mode', (mode) => {
  it('dead-letters each message with several faults under the documented winner', async () => {
    const queueUrl = await queues.create(unique('faults'));
    const dlqUrl = await queues.create(unique('faults-dlq'));
    const name = unique('c');
    const tag = name.slice(-8);
    const first = faultyDeliveries(tag, LONG_TEXT);
    const all = [...first, conflictingDelivery(tag, LONG_TEXT)];
    const bad = all.filter((d) => d.faults.length > 0);

    const settled: SettledEvent<unknown, Message>[] = [];
    const consumer = createSqsConsumer({
      clientConfig: sqsClientConfig(),
      queueUrl,
      deadLetter: { queueUrl: dlqUrl },
      mode,
      concurrency: 4,
      waitTimeSeconds: 1,
      messageId: { fallback: false },
      inbox: faultOrderInbox(store, name),
      handler: faultOrderHandler(store, name),
      onSettled: (event) => void settled.push(event),
    });
    consumers.push(consumer);
    await consumer.start();

    await send(queueUrl, first, 0);
    await waitFor('the first messages settled', () => settled.length >= first.length, {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    // The good message's id again, with another payload: sent once the good one is handled.
    await send(queueUrl, all.slice(first.length), first.length);

    const copies = await queues.receive(dlqUrl, bad.length, 20);
    expect(copies).toHaveLength(bad.length);
    const stored = await createDeadLetters(store).list({ consumer: name });
    expect(stored).toHaveLength(bad.length);
    const seen = all.map((d, i) => {
      const copy = copies.find((m) => attribute(m, CASE) === String(i));
      const letter = stored.find((l) => l.headers[CASE] === String(i));
      return [d.label, attribute(copy, DEAD_LETTER_HEADERS.reason), letter?.reason];
    });
    const expected = all.map((d) => {
      const winner = d.faults.length === 0 ? undefined : winnerOf(d.faults);
      return [d.label, winner, winner];
    });
    expect(seen).toEqual(expected);
    // Each letter says where the message was: its queue and the id SQS gave it.
    for (const letter of stored) {
      const copy = copies.find((m) => attribute(m, CASE) === letter.headers[CASE]);
      expect(letter.delivery.position).toEqual({
        queue: queueUrl,
        brokerMessageId: expect.stringMatching(/\S/) as unknown,
      });
      // The copy on the dead-letter queue is a new message, with an id of its own.
      expect(letter.delivery.position?.brokerMessageId).not.toBe(copy?.MessageId);
    }
    expect(await store.effectCounts(name)).toEqual(new Map([[`good-${tag}`, 1]]));
  });
});
