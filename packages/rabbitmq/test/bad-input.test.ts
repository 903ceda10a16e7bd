import { randomBytes } from 'node:crypto';
import type { GetMessage, Options } from 'amqplib';
import { createDeadLetters, createInbox, DEAD_LETTER_HEADERS } from '@justonce/core';
import { openTestStore } from '../../core/test/db';
import { createRabbitConsumer, type RabbitConsumer } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { amqpUrl, openAdmin, uniqueName, type Admin } from './broker';
import { createEffectsTable, effectCounts, EventLog, stopAndRemove, writeEffect } from './support';

/**
 * Input the store cannot keep as given (U+0000 in the message id, the scope or a header),
 * and header tables amqplib decodes but cannot encode again, on a real broker: each is
 * dead-lettered once, with its reason, to the dead-letter exchange and the store, then
 * acknowledged, and the consumer goes on with the next message. Nothing comes back.
 */

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** How long a settled message is watched for a redelivery that must not come. */
const QUIET_MS = 1_500;

let store: TestStore;
let admin: Admin;
const running: RabbitConsumer[] = [];

beforeAll(async () => {
  store = await openTestStore('postgres');
  await createEffectsTable(store);
  admin = await openAdmin();
});

afterEach(() => stopAndRemove(admin, running));

afterAll(async () => {
  await admin.close();
  await store.dispose();
});

function id(label: string): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

/** A short description of what the consumer did, for a failure message. */
function describeEvents(log: EventLog): string {
  return JSON.stringify(
    log.settled().map((e) => ({
      action: e.action,
      messageId: e.messageId,
      status: e.outcome?.status,
      reason: e.outcome?.status === 'dead-lettered' ? e.outcome.reason : undefined,
      error: (e.error ?? (e.outcome?.status === 'failed' ? e.outcome.error : undefined))?.message,
    })),
  ).slice(0, 2_000);
}

interface Run {
  readonly queue: string;
  readonly consumer: RabbitConsumer;
  readonly log: EventLog;
  /** The copy on the dead-letter queue. */
  readonly dead: GetMessage;
}

/**
 * Publishes `bad`, then a good message, to a fresh consumer; waits until the good one is
 * applied and `bad` is dead-lettered, then watches a while for any redelivery.
 */
async function deadLetterOnce(
  label: string,
  bad: { body: Buffer; options: Options.Publish },
): Promise<Run> {
  const queue = uniqueName(label);
  const log = new EventLog();
  const consumer = createRabbitConsumer({
    url: amqpUrl(),
    queue,
    inbox: createInbox({ store, consumer: queue }),
    handler: async (ctx) => writeEffect(ctx.trx, store, ctx.messageId),
    ...log.hooks,
    retry: { delaysMs: [200] },
  });
  running.push(consumer);
  await consumer.start();
  const good = id('good');
  admin.channel.sendToQueue(queue, bad.body, { persistent: true, ...bad.options });
  admin.channel.sendToQueue(queue, Buffer.from('{"ok":true}'), { messageId: good });

  await waitFor('the good message to be applied after the bad one', async () => {
    return (await effectCounts(store))[good] === 1;
  }).catch((error: Error) => {
    throw new Error(`${error.message}; settled so far: ${describeEvents(log)}`);
  });
  await waitFor('the bad message to be dead-lettered', () =>
    log.settled('dead-lettered').length === 1 ? true : undefined,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; settled so far: ${describeEvents(log)}`);
  });
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));

  // Settled exactly twice: the bad message once (dead-lettered), the good one once (acked).
  expect(
    log
      .settled()
      .map((e) => e.action)
      .sort(),
  ).toEqual(['acked', 'dead-lettered']);
  expect(await admin.depth(queue)).toBe(0);
  for (const retryQueue of consumer.topology().retryQueues) {
    expect(await admin.depth(retryQueue)).toBe(0);
  }
  const dead = await admin.drain(consumer.topology().deadLetterQueue!);
  expect(dead).toHaveLength(1);
  expect(dead[0]!.content.equals(bad.body)).toBe(true);
  return { queue, consumer, log, dead: dead[0]! };
}

function headersOf(message: GetMessage): Record<string, unknown> {
  return (message.properties.headers ?? {}) as Record<string, unknown>;
}

async function theLetter(queue: string) {
  const letters = await createDeadLetters(store).list({ consumer: queue });
  expect(letters).toHaveLength(1);
  return letters[0]!;
}

describe('bad input on a real broker (RabbitMQ)', () => {
  it('dead-letters a message id holding U+0000 as INVALID_MESSAGE_ID; the letter keeps the id exactly', async () => {
    const messageId = `a\u0000b-${randomBytes(2).toString('hex')}`;
    const body = Buffer.from('{"n":1}');
    const { queue, log, dead } = await deadLetterOnce('nul-id', {
      body,
      options: { messageId, headers: { note: 'plain' } },
    });

    expect(log.settled('dead-lettered')[0]?.outcome).toMatchObject({
      reason: 'INVALID_MESSAGE_ID',
    });
    expect(dead.properties.messageId).toBe(messageId);
    expect(headersOf(dead)[DEAD_LETTER_HEADERS.reason]).toBe('INVALID_MESSAGE_ID');
    expect(headersOf(dead).note).toBe('plain');
    const letter = await theLetter(queue);
    expect(letter.reason).toBe('INVALID_MESSAGE_ID');
    expect(letter.messageId).toBe(messageId);
    expect(letter.headers).toEqual({ note: 'plain' });
    expect(Buffer.from(letter.body as Uint8Array).equals(body)).toBe(true);
  });

  it('dead-letters a tenant header holding U+0000 as INVALID_SCOPE; the letter keeps the headers exactly', async () => {
    const messageId = id('nul-scope');
    const headers = { tenant: 'acme\u0000corp', note: 'plain' };
    const body = Buffer.from([0x00, 0xff, 0x10]);
    const { queue, dead } = await deadLetterOnce('nul-scope', {
      body,
      options: { messageId, headers },
    });

    expect(headersOf(dead)[DEAD_LETTER_HEADERS.reason]).toBe('INVALID_SCOPE');
    expect(headersOf(dead).tenant).toBe(headers.tenant);
    const letter = await theLetter(queue);
    expect(letter.reason).toBe('INVALID_SCOPE');
    expect(letter.messageId).toBe(messageId);
    expect(letter.headers).toEqual(headers);
    expect(Buffer.from(letter.body as Uint8Array).equals(body)).toBe(true);
  });

  it.each([
    ['a header value', { note: 'x\u0000y', other: 'plain' }],
    ['a header name', { 'k\u0000ey': 'v', other: 'plain' }],
  ])(
    'dead-letters %s holding U+0000 as INVALID_HEADERS; the letter keeps the headers exactly',
    async (_, headers) => {
      const messageId = id('nul-header');
      const body = Buffer.from('payload');
      const { queue, dead } = await deadLetterOnce('nul-header', {
        body,
        options: { messageId, headers },
      });

      expect(headersOf(dead)[DEAD_LETTER_HEADERS.reason]).toBe('INVALID_HEADERS');
      for (const [name, value] of Object.entries(headers))
        expect(headersOf(dead)[name]).toBe(value);
      const letter = await theLetter(queue);
      expect(letter.reason).toBe('INVALID_HEADERS');
      expect(letter.messageId).toBe(messageId);
      expect(letter.headers).toEqual(headers);
      expect(Buffer.from(letter.body as Uint8Array).equals(body)).toBe(true);
    },
  );

  it('dead-letters a message-id header of bytes that are not UTF-8 as INVALID_MESSAGE_ID (decoded, different ids would read as one)', async () => {
    const raw = Buffer.from([0x6f, 0x72, 0x64, 0xff, randomBytes(1)[0]! | 0x80]);
    const { queue, dead } = await deadLetterOnce('bytes-id', {
      body: Buffer.from('x'),
      options: { headers: { 'message-id': raw } },
    });

    expect(headersOf(dead)[DEAD_LETTER_HEADERS.reason]).toBe('INVALID_MESSAGE_ID');
    expect(Buffer.isBuffer(headersOf(dead)['message-id'])).toBe(true);
    expect((headersOf(dead)['message-id'] as Buffer).equals(raw)).toBe(true);
    expect((await theLetter(queue)).reason).toBe('INVALID_MESSAGE_ID');
  });

  it('handles a header table amqplib decodes but cannot encode again, and dead-letters it when it has no id', async () => {
    // A nested `__proto__` field of bytes: decoded, it makes the table inherit from a Buffer.
    const nested: Record<string, unknown> = {};
    Object.defineProperty(nested, '__proto__', {
      value: Buffer.from('ab'),
      enumerable: true,
    });
    // A double below -2^63: amqplib would encode it again as an int64, and refuse.
    // (NaN and ±Infinity cannot be sent at all: RabbitMQ closes the connection, 541.)
    const headers = { nested, huge: { '!': 'double', value: -1e300 }, note: 'plain' };
    const { queue, dead } = await deadLetterOnce('odd-table', {
      body: Buffer.from('no id'),
      options: { headers },
    });

    const copy = headersOf(dead);
    expect(copy[DEAD_LETTER_HEADERS.reason]).toBe('MISSING_MESSAGE_ID');
    expect(copy.huge).toBe(-1e300);
    expect(copy.note).toBe('plain');
    expect((await theLetter(queue)).reason).toBe('MISSING_MESSAGE_ID');
  });
});
