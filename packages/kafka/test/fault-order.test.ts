import { createDeadLetters, type SettledEvent } from '@justonce/core';
import { createKafkaConsumer } from '../src';
import { createTopics, freshGroup, readTopic, unique, useKafkaTestBed } from './support';
import {
  NUL_TEXT,
  expectDocumentedWinners,
  faultOrderCases,
  faultOrderConsumer,
  sendFaultOrderCases,
} from '../../../test-support/fault-order';

/**
 * docs/bad-input.md, "Which fault wins", on the real broker: records with two and three
 * faults at once (U+0000 in the id, the tenant or a header; a body the inbox's JSON `decode`
 * refuses; an unknown `type`; a payload the schema refuses; an id handled before with
 * another payload) each reach the dead-letter topic and the store under the documented
 * winner, in message and in batch mode.
 */

const bed = useKafkaTestBed();

describe.each(['message', 'batch'] as const)('which fault wins on Kafka, %s mode', (mode) => {
  it('dead-letters each record with several faults under the documented winner', async () => {
    const { kafka, admin, producer, store, running } = bed;
    const topic = unique('faults');
    const dlq = `${topic}.dlq`;
    const name = unique('c');
    const tag = name.slice(-8);
    await createTopics(admin, [topic, dlq], 1);
    const cases = faultOrderCases(tag, NUL_TEXT);

    const settled: SettledEvent[] = [];
    const consumer = createKafkaConsumer({
      ...freshGroup(kafka, [topic]),
      mode,
      batchSize: 4,
      messageId: { fallback: false },
      ...faultOrderConsumer(store, name),
      onSettled: (event) => void settled.push(event),
    });
    running.push(consumer);
    await consumer.start();

    await sendFaultOrderCases(
      cases,
      (sent) =>
        producer.send({
          topic,
          acks: -1,
          messages: sent.map((m) => ({ value: m.body, headers: m.headers })),
        }),
      () => settled.length,
      { timeoutMs: 30_000, intervalMs: 100 },
    );

    const letters = await readTopic(kafka, dlq, cases.bad.length);
    const stored = await createDeadLetters(store).list({ consumer: name });
    expectDocumentedWinners(cases, letters, (copy, header) => copy?.headers[header], stored);
    expect(await store.effectCounts(name)).toEqual(new Map([[`good-${tag}`, 1]]));
  });
});
