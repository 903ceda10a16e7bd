import { SendMessageCommand, type Message, type MessageAttributeValue } from '@aws-sdk/client-sqs';
import {
  createDeadLetters,
  createInbox,
  DEAD_LETTER_HEADERS,
  type DeadLetter,
  type SettledEvent,
} from '@justonce/core';
import { createSqsConsumer, type SqsConsumer } from '../src';
import {
  TestQueues,
  openEffectsStore,
  sqsClientConfig,
  unique,
  type EffectsStore,
} from './support';
import { waitFor } from '../../../test-support/wait-for';

/**
 * Message ids and scopes the store cannot keep as given, on ElasticMQ: each message is
 * dead-lettered once, with its reason, to the dead-letter queue and the store, deleted from
 * its queue, and the consumer goes on with the next message. Nothing comes back.
 *
 * SQS itself refuses U+0000 (and every character outside the XML range, lone surrogates
 * included) in message attributes and bodies at SendMessage, so a scope or header holding
 * one cannot arrive (the first test pins that down). A message id can: an extractor reads
 * it from a JSON body (where `\u0000` is an escape of plain characters) or from a Binary
 * attribute (any bytes). Other ids and scopes the inbox refuses arrive as attributes too
 * long to be one.
 */

let store: EffectsStore;
let queues: TestQueues;
const consumers: SqsConsumer[] = [];

beforeAll(async () => {
  store = await openEffectsStore();
  queues = new TestQueues();
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((w) => w.stop({ timeoutMs: 5_000 })));
});

afterAll(async () => {
  await queues.dispose();
  await store.dispose();
});

/** How long the queues are watched, once all is settled, for a delivery that must not come. */
const QUIET_MS = 2_500;

const stringAttribute = (value: string): MessageAttributeValue => ({
  DataType: 'String',
  StringValue: value,
});

interface BadCase {
  readonly label: string;
  readonly body: string;
  readonly attributes: Record<string, MessageAttributeValue>;
  readonly reason: string;
  /** The id the store's letter must give back (`null`: none). */
  readonly id: string | null;
}

/** The bad messages, each with the reason it must be dead-lettered for. */
function badCases(tag: string): BadCase[] {
  const nulId = `json\u0000id-${tag}`;
  const binaryId = `bin\u0000id-${tag}`;
  const longId = `long-${tag}-`.padEnd(300, 'x');
  return [
    {
      label: 'an id with U+0000 from the JSON body',
      body: JSON.stringify({ id: nulId, n: 1 }),
      attributes: {},
      reason: 'INVALID_MESSAGE_ID',
      id: nulId,
    },
    {
      label: 'an id with U+0000 from a Binary attribute',
      body: `binary-${tag}`,
      attributes: { 'bin-id': { DataType: 'Binary', BinaryValue: Buffer.from(binaryId) } },
      reason: 'INVALID_MESSAGE_ID',
      id: binaryId,
    },
    {
      label: 'a message-id attribute longer than maxIdLength',
      body: `long-id-${tag}`,
      attributes: { 'message-id': stringAttribute(longId), note: stringAttribute('kept') },
      reason: 'INVALID_MESSAGE_ID',
      id: longId,
    },
    {
      label: 'a tenant attribute longer than a scope may be',
      body: `long-scope-${tag}`,
      attributes: {
        'message-id': stringAttribute(`scoped-${tag}`),
        tenant: stringAttribute('t'.repeat(300)),
      },
      reason: 'INVALID_SCOPE',
      id: `scoped-${tag}`,
    },
  ];
}

/** The id an extractor finds: a Binary `bin-id` attribute as UTF-8, else the body's `id`. */
function extractId(message: Message): string | undefined {
  const bytes = message.MessageAttributes?.['bin-id']?.BinaryValue;
  if (bytes !== undefined) return Buffer.from(bytes).toString('utf8');
  const parsed = JSON.parse(message.Body ?? '') as { id?: unknown };
  return typeof parsed.id === 'string' ? parsed.id : undefined;
}

/** Deleted from its queue: acked, or dead-lettered (forwarded, then deleted). */
function deleted(event: SettledEvent<unknown, Message>): boolean {
  return event.action === 'acked' || event.action === 'dead-lettered';
}

function attribute(message: Message | undefined, name: string): string | undefined {
  return message?.MessageAttributes?.[name]?.StringValue;
}

describe('bad input on a real broker (SQS / ElasticMQ)', () => {
  it('SQS refuses U+0000 in a String attribute and in the body, so no scope or header can hold one', async () => {
    const queueUrl = await queues.create(unique('refuses-nul'));
    const send = (body: string, attributes: Record<string, MessageAttributeValue>) =>
      queues.sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: body,
          MessageAttributes: attributes,
        }),
      );
    await expect(send('x', { tenant: stringAttribute('a\u0000b') })).rejects.toThrow();
    await expect(send('x', { note: stringAttribute('a\uD800b') })).rejects.toThrow();
    await expect(send('a\u0000b', {})).rejects.toThrow();
    expect(await queues.depth(queueUrl)).toBe(0);
  });

  it.each(['message', 'batch'] as const)(
    '%s mode: dead-letters each bad message once (DLQ and store), deletes it, and goes on',
    async (mode) => {
      const queueUrl = await queues.create(unique('bad'));
      const dlqUrl = await queues.create(unique('bad-dlq'));
      const consumer = unique('c');
      const tag = consumer.slice(-8);
      const cases = badCases(tag);
      const goodId = `good-${tag}`;
      for (const c of cases) {
        await queues.sqs.send(
          new SendMessageCommand({
            QueueUrl: queueUrl,
            MessageBody: c.body,
            MessageAttributes: c.attributes,
          }),
        );
      }
      await queues.send(queueUrl, [{ body: '{"ok":true}', attributes: { 'message-id': goodId } }]);

      const settled: SettledEvent<unknown, Message>[] = [];
      const sqsConsumer = createSqsConsumer({
        clientConfig: sqsClientConfig(),
        queueUrl,
        deadLetter: { queueUrl: dlqUrl },
        mode,
        concurrency: 4,
        waitTimeSeconds: 1,
        retry: { baseMs: 0, capMs: 0 },
        messageId: { extract: extractId, fallback: false },
        inbox: createInbox({ store, consumer }),
        handler: async (ctx) => {
          await ctx.trx.raw(
            `insert into ${store.effectsTable} (consumer, message_id) values (?, ?)`,
            [consumer, ctx.messageId],
          );
        },
        onSettled: (event) => settled.push(event),
      });
      consumers.push(sqsConsumer);
      await sqsConsumer.start();

      const total = cases.length + 1;
      await waitFor(
        'every message settled and deleted',
        () => (settled.filter(deleted).length >= total ? true : undefined),
        { timeoutMs: 20_000, intervalMs: 100 },
      ).catch((error: Error) => {
        const seen = settled.map((e) => [e.action, e.outcome?.status, e.error?.message]);
        throw new Error(`${error.message}; settled: ${JSON.stringify(seen).slice(0, 2_000)}`);
      });
      await new Promise((resolve) => setTimeout(resolve, QUIET_MS));

      // Settled once each: nothing was retried, released or left in flight.
      expect(settled).toHaveLength(total);
      expect(settled.every(deleted)).toBe(true);
      expect(settled.filter((e) => e.action === 'dead-lettered')).toHaveLength(cases.length);
      expect(await queues.depth(queueUrl)).toBe(0);
      expect(Object.fromEntries(await store.effectCounts(consumer))).toEqual({ [goodId]: 1 });

      const dead = await queues.receive(dlqUrl, cases.length, 10);
      expect(dead).toHaveLength(cases.length);
      const letters = await createDeadLetters(store).list({ consumer });
      expect(letters).toHaveLength(cases.length);
      for (const c of cases) {
        const copy = dead.find((m) => m.Body === c.body);
        expect([c.label, attribute(copy, DEAD_LETTER_HEADERS.reason)]).toEqual([c.label, c.reason]);
        // The copy keeps the message's own attributes, Binary ones included.
        for (const [name, value] of Object.entries(c.attributes)) {
          const kept = copy?.MessageAttributes?.[name];
          expect(kept?.DataType).toBe(value.DataType);
          expect(kept?.StringValue).toBe(value.StringValue);
          if (value.BinaryValue !== undefined) {
            expect(
              Buffer.from(kept?.BinaryValue ?? []).equals(Buffer.from(value.BinaryValue)),
            ).toBe(true);
          }
        }
        const letter: DeadLetter | undefined = letters.find((l) => l.body === c.body);
        expect([c.label, letter?.reason]).toEqual([c.label, c.reason]);
        expect(attribute(copy, DEAD_LETTER_HEADERS.deadLetterId)).toBe(letter?.id);
        // The store gives back the exact id, headers (String attributes) and body.
        expect(letter?.messageId).toBe(c.id);
        const headers = Object.fromEntries(
          Object.entries(c.attributes)
            .filter(([, v]) => v.DataType === 'String')
            .map(([k, v]) => [k, v.StringValue]),
        );
        expect(letter?.headers).toEqual(headers);
        expect(letter?.body).toBe(c.body);
      }
    },
  );
});
