import type { GetMessage } from 'amqplib';
import {
  createDeadLetters,
  DEAD_LETTER_HEADERS,
  DEAD_LETTER_POSITION_HEADERS,
} from '@justonce/core';
import { openTestStore } from '../../core/test/db';
import { createRabbitConsumer, type RabbitConsumer } from '../src';
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
import { amqpUrl, openAdmin, uniqueName, type Admin } from './broker';
import { effectCounts } from '../../../test-support/effects';
import { createEffectsTable, EventLog } from './support';

/**
 * docs/bad-input.md, "Which fault wins", on a real broker: messages with two and three faults
 * at once (U+0000 in the id, the tenant or a header; a body the inbox's JSON `decode`
 * refuses; an unknown `type`; a payload the schema refuses; an id handled before with
 * another payload) each reach the dead-letter queue and the store under the documented
 * winner, in message and in batch mode.
 */

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** The header that tells the test's messages apart (the bodies repeat). */
const CASE = 'x-case';

let store: TestStore;
let admin: Admin;
const running: RabbitConsumer[] = [];

beforeAll(async () => {
  store = await openTestStore('postgres');
  await createEffectsTable(store);
  admin = await openAdmin();
});

afterEach(async () => {
  for (const consumer of running.splice(0)) {
    await consumer.stop();
    const t = consumer.topology();
    await admin.remove({
      queues: [t.queue, ...t.retryQueues, ...(t.deadLetterQueue ? [t.deadLetterQueue] : [])],
      exchanges: [t.deadLetterExchange],
    });
  }
});

afterAll(async () => {
  await admin.close();
  await store.dispose();
});

function send(queue: string, deliveries: readonly FaultyDelivery[], from: number): void {
  for (const [i, d] of deliveries.entries()) {
    admin.channel.sendToQueue(queue, Buffer.from(d.body), {
      persistent: true,
      headers: {
        ...(d.id === undefined ? {} : { 'message-id': d.id }),
        ...d.headers,
        [CASE]: String(from + i),
      },
    });
  }
}

function headerOf(message: GetMessage | undefined, name: string): unknown {
  return (message?.properties.headers as Record<string, unknown> | undefined)?.[name];
}

describe.each(['message', 'batch'] as const)('which fault wins on RabbitMQ, %s mode', (mode) => {
  it('dead-letters each message with several faults under the documented winner', async () => {
    const queue = uniqueName('faults');
    const tag = queue.slice(-8);
    const first = faultyDeliveries(tag, NUL_TEXT);
    const all = [...first, conflictingDelivery(tag, NUL_TEXT)];
    const bad = all.filter((d) => d.faults.length > 0);
    const log = new EventLog();
    const consumer = createRabbitConsumer({
      url: amqpUrl(),
      queue,
      mode,
      messageId: { fallback: false },
      inbox: faultOrderInbox(store, queue),
      handler: faultOrderHandler(store, queue),
      ...log.hooks,
      retry: { delaysMs: [200] },
    });
    running.push(consumer);
    await consumer.start();

    send(queue, first, 0);
    await waitFor('the first messages settled', () =>
      log.settled().length >= first.length ? true : undefined,
    );
    // The good message's id again, with another payload: sent once the good one is handled.
    send(queue, all.slice(first.length), first.length);
    await waitFor('every bad message dead-lettered', () =>
      log.settled('dead-lettered').length >= bad.length ? true : undefined,
    );

    const copies = await admin.drain(consumer.topology().deadLetterQueue!);
    expect(copies).toHaveLength(bad.length);
    const stored = await createDeadLetters(store).list({ consumer: queue });
    expect(stored).toHaveLength(bad.length);
    const seen = all.map((d, i) => {
      const copy = copies.find((m) => headerOf(m, CASE) === String(i));
      const letter = stored.find((l) => l.headers[CASE] === String(i));
      return [d.label, headerOf(copy, DEAD_LETTER_HEADERS.reason), letter?.reason];
    });
    const expected = all.map((d) => {
      const winner = d.faults.length === 0 ? undefined : winnerOf(d.faults);
      return [d.label, winner, winner];
    });
    expect(seen).toEqual(expected);
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
