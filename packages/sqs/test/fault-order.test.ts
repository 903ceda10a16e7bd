import type { Message } from '@aws-sdk/client-sqs';
import { createDeadLetters, type SettledEvent } from '@justonce/core';
import { createSqsConsumer } from '../src';
import { sqsClientConfig, unique, useSqsTestBed } from './support';
import {
  CASE_HEADER,
  LONG_TEXT,
  expectDocumentedWinners,
  faultOrderCases,
  faultOrderConsumer,
  sendFaultOrderCases,
} from '../../../test-support/fault-order';

/**
 * docs/bad-input.md, "Which fault wins", on ElasticMQ: messages with two and three faults at
 * once each reach the dead-letter queue and the store under the documented winner, in
 * message and in batch mode. SQS refuses U+0000 in attributes, so the id and the tenant are
 * made too long to be one instead, and no header can fail (see bad-input.test.ts).
 */

const bed = useSqsTestBed();

function attribute(message: Message | undefined, name: string): string | undefined {
  return message?.MessageAttributes?.[name]?.StringValue;
}

describe.each(['message', 'batch'] as const)('which fault wins on SQS, %s mode', (mode) => {
  it('dead-letters each message with several faults under the documented winner', async () => {
    const { store, queues, consumers } = bed;
    const queueUrl = await queues.create(unique('faults'));
    const dlqUrl = await queues.create(unique('faults-dlq'));
    const name = unique('c');
    const tag = name.slice(-8);
    const cases = faultOrderCases(tag, LONG_TEXT);

    const settled: SettledEvent<unknown, Message>[] = [];
    const consumer = createSqsConsumer({
      clientConfig: sqsClientConfig(),
      queueUrl,
      deadLetter: { queueUrl: dlqUrl },
      mode,
      concurrency: 4,
      waitTimeSeconds: 1,
      messageId: { fallback: false },
      ...faultOrderConsumer(store, name),
      onSettled: (event) => void settled.push(event),
    });
    consumers.push(consumer);
    await consumer.start();

    await sendFaultOrderCases(
      cases,
      (sent) =>
        queues.send(
          queueUrl,
          sent.map((m) => ({ body: m.body, attributes: m.headers })),
        ),
      () => settled.length,
      { timeoutMs: 30_000, intervalMs: 100 },
    );

    const copies = await queues.receive(dlqUrl, cases.bad.length, 20);
    const stored = await createDeadLetters(store).list({ consumer: name });
    expectDocumentedWinners(cases, copies, attribute, stored);
    // Each letter says where the message was: its queue and the id SQS gave it.
    for (const letter of stored) {
      const copy = copies.find((m) => attribute(m, CASE_HEADER) === letter.headers[CASE_HEADER]);
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
