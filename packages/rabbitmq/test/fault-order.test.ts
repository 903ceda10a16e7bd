import type { GetMessage } from 'amqplib';
import {
  createDeadLetters,
  DEAD_LETTER_HEADERS,
  DEAD_LETTER_POSITION_HEADERS,
} from '@justonce/core';
import { createRabbitConsumer } from '../src';
import {
  NUL_TEXT,
  expectDocumentedWinners,
  faultOrderCases,
  faultOrderConsumer,
  sendFaultOrderCases,
} from '../../../test-support/fault-order';
import { waitFor } from '../../../test-support/wait-for';
import { amqpUrl, uniqueName } from './broker';
import { effectCounts } from '../../../test-support/effects';
import { EventLog, useRabbitTestBed } from './support';

/**
 * docs/bad-input.md, "Which fault wins", on a real broker: messages with two and three faults
 * at once (U+0000 in the id, the tenant or a header; a body the inbox's JSON `decode`
 * refuses; an unknown `type`; a payload the schema refuses; an id handled before with
 * another payload) each reach the dead-letter queue and the store under the documented
 * winner, in message and in batch mode.
 */

const bed = useRabbitTestBed();

function headerOf(message: GetMessage | undefined, name: string): unknown {
  return (message?.properties.headers as Record<string, unknown> | undefined)?.[name];
}

describe.each(['message', 'batch'] as const)('which fault wins on RabbitMQ, %s mode', (mode) => {
  it('dead-letters each message with several faults under the documented winner', async () => {
    const { store, admin, running } = bed;
    const queue = uniqueName('faults');
    const tag = queue.slice(-8);
    const cases = faultOrderCases(tag, NUL_TEXT);
    const log = new EventLog();
    const consumer = createRabbitConsumer({
      url: amqpUrl(),
      queue,
      mode,
      messageId: { fallback: false },
      ...faultOrderConsumer(store, queue),
      ...log.hooks,
      retry: { delaysMs: [200] },
    });
    running.push(consumer);
    await consumer.start();

    await sendFaultOrderCases(
      cases,
      (sent) => {
        for (const { body, headers } of sent) {
          admin.channel.sendToQueue(queue, Buffer.from(body), { persistent: true, headers });
        }
      },
      () => log.settled().length,
    );
    await waitFor('every bad message dead-lettered', () =>
      log.settled('dead-lettered').length >= cases.bad.length ? true : undefined,
    );

    const copies = await admin.drain(consumer.topology().deadLetterQueue!);
    const stored = await createDeadLetters(store).list({ consumer: queue });
    expectDocumentedWinners(cases, copies, headerOf, stored);
    // Each says where it was delivered from: the queue, by the default exchange.
    const position = { queue, exchange: '', routingKey: queue };
    for (const copy of copies) {
      expect({
        queue: headerOf(copy, DEAD_LETTER_HEADERS.source),
        exchange: headerOf(copy, DEAD_LETTER_POSITION_HEADERS.exchange),
        routingKey: headerOf(copy, DEAD_LETTER_POSITION_HEADERS.routingKey),
      }).toEqual(position);
    }
    for (const letter of stored) expect(letter.delivery.position).toEqual(position);
    expect(await effectCounts(store, { consumer: queue })).toEqual(new Map([[`good-${tag}`, 1]]));
  });
});
