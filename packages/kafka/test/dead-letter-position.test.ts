import {
  createAdmin,
  createInbox,
  DEAD_LETTER_POSITION_HEADERS,
  type SettledEvent,
} from '@justonce/core';
import { createKafkaConsumer, DEAD_LETTER_HEADERS } from '../src';
import { createTopics, freshGroup, readTopic, unique, useKafkaTestBed } from './support';
import { waitFor } from '../../../test-support/wait-for';

/**
 * A dead-lettered record carries where it sat: its topic, partition and offset, in the
 * dead-letter topic's headers (`x-justonce-source`, `-partition`, `-offset`), in the facts
 * `onSettled` reports, and in the store's letter (`delivery.position`, which the admin API
 * and `justonce dead-letters show` give back). Both ways to a dead letter: bad input (no
 * message id) and a handler that used up its attempts.
 */

const bed = useKafkaTestBed();

describe.each(['message', 'batch'] as const)('Kafka dead letters in %s mode', (mode) => {
  it('carry the source topic, partition and offset', async () => {
    const { kafka, admin, producer, store, running } = bed;
    const topic = unique('position');
    const dlq = `${topic}.dlq`;
    const name = unique('c');
    await createTopics(admin, [topic], 3);
    await createTopics(admin, [dlq], 1);
    // Partition 2: a good record at offset 0, the record without an id at 1, the one whose
    // handler fails at 2. Partition 1: a failing one at offset 0.
    await producer.send({
      topic,
      acks: -1,
      messages: [
        { partition: 2, value: 'ok', headers: { 'message-id': `${name}-ok` } },
        { partition: 2, value: 'no-id', headers: { note: 'no id' } },
        { partition: 2, value: 'fails', headers: { 'message-id': `${name}-fails-2` } },
        { partition: 1, value: 'fails', headers: { 'message-id': `${name}-fails-1` } },
      ],
    });

    const settled: SettledEvent[] = [];
    const consumer = createKafkaConsumer({
      ...freshGroup(kafka, [topic]),
      mode,
      messageId: { fallback: false },
      inbox: createInbox({ store, consumer: name, maxAttempts: 1 }),
      handler: async (ctx) => {
        if (ctx.messageId.includes('-fails-')) throw new Error('declined');
      },
      onSettled: (event) => void settled.push(event),
    });
    running.push(consumer);
    await consumer.start();

    const expected = [
      { id: null, reason: 'MISSING_MESSAGE_ID', position: { topic, partition: 2, offset: '1' } },
      {
        id: `${name}-fails-2`,
        reason: 'MAX_ATTEMPTS',
        position: { topic, partition: 2, offset: '2' },
      },
      {
        id: `${name}-fails-1`,
        reason: 'MAX_ATTEMPTS',
        position: { topic, partition: 1, offset: '0' },
      },
    ];
    const byOffset = (a: { position?: { partition?: number; offset?: string } }) =>
      `${a.position?.partition}/${a.position?.offset}`;
    const sorted = <T extends { position?: { partition?: number; offset?: string } }>(list: T[]) =>
      [...list].sort((a, b) => byOffset(a).localeCompare(byOffset(b)));

    // The dead-letter topic's copies.
    const copies = await readTopic(kafka, dlq, expected.length);
    const copyFacts = copies.map((c) => ({
      id: c.headers[DEAD_LETTER_HEADERS.messageId] ?? null,
      reason: c.headers[DEAD_LETTER_HEADERS.reason],
      position: {
        topic: c.headers[DEAD_LETTER_HEADERS.source],
        partition: Number(c.headers[DEAD_LETTER_POSITION_HEADERS.partition]),
        offset: c.headers[DEAD_LETTER_POSITION_HEADERS.offset],
      },
    }));
    expect(sorted(copyFacts)).toEqual(sorted(expected));

    // The facts onSettled reported.
    await waitFor('three dead-lettered events', () =>
      settled.filter((e) => e.action === 'dead-lettered').length === expected.length
        ? true
        : undefined,
    );
    const reported = settled
      .filter((e) => e.action === 'dead-lettered')
      .map((e) => ({
        id: e.deadLetter?.messageId ?? null,
        reason: e.deadLetter?.reason,
        position: e.deadLetter?.position,
      }));
    expect(sorted(reported)).toEqual(sorted(expected));

    // The store's letters, through the admin API.
    const justonce = createAdmin(store);
    const letters = await justonce.deadLetters.list({ consumer: name });
    const stored = letters.map((l) => ({
      id: l.messageId,
      reason: l.reason,
      position: l.delivery.position,
    }));
    expect(sorted(stored)).toEqual(sorted(expected));
  });
});
