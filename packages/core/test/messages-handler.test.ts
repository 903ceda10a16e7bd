import * as v from 'valibot';
import { z } from 'zod';
import {
  ConfigurationError,
  DEAD_LETTER_HEADERS,
  InvalidPayloadError,
  UnknownMessageTypeError,
  createDeadLetters,
  createInbox,
  createOutbox,
  createRelay,
  defineMessage,
  messageHandler,
  on,
  type Handler,
  type HandlerContext,
  type InboxOptions,
  type MessageData,
  type Relay,
} from '../src';
import { createMemoryBroker, type MemoryBroker, type MemoryMessage } from '../src/testing';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { envelope, freshId } from './fixtures/inbox-support';
import { ORDER_SCHEMAS, orderType, zodOrder } from './fixtures/message-schemas';
import { refusal } from '../../../test-support/refusal';

/**
 * `messageHandler` end to end: deliveries through the memory broker into an inbox, routed by
 * their `type` header; a bad payload or an unknown type is dead-lettered at once with its own
 * reason, in the store and in the broker's dead-letter list (with the shared facts).
 */

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

const OrderCreated = defineMessage({
  type: 'order.created',
  schema: z.object({
    orderId: z.string().min(1),
    total: z.number().positive(),
    placedAt: z.iso.datetime().transform((text) => new Date(text)),
  }),
});
const OrderCancelled = defineMessage({
  type: 'order.cancelled',
  schema: z.object({ orderId: z.string() }),
});

describe.each(ALL_STORE_KINDS)('messageHandler on %s', (kind) => {
  let store: TestStore;
  const brokers: MemoryBroker[] = [];
  const relays: Relay[] = [];

  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterEach(async () => {
    await Promise.all(relays.splice(0).map((r) => r.stop()));
    await Promise.all(brokers.splice(0).map((b) => b.close()));
  });
  afterAll(async () => {
    await store.dispose();
  });

  /** A broker with a started consumer of `queue` running `handler` through a fresh inbox. */
  async function consuming(
    handler: Handler,
    extra: Partial<InboxOptions> = {},
  ): Promise<{ broker: MemoryBroker; queue: string; consumer: string }> {
    const broker = createMemoryBroker();
    brokers.push(broker);
    const queue = freshId('q');
    const consumer = freshId('consumer');
    const inbox = createInbox({ store, consumer, ...extra });
    await broker.consume(queue, { inbox, handler }).start();
    return { broker, queue, consumer };
  }

  const message = (type: string | undefined, body: unknown): MemoryMessage => ({
    id: freshId('m'),
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: type === undefined ? {} : { type },
  });
  const created = { orderId: 'o-1', total: 9.5, placedAt: '2025-01-02T03:04:05Z' };

  async function lettersOf(consumer: string) {
    return createDeadLetters(store).list({ consumer });
  }

  it('hands a valid payload, as the schema outputs it, to its route once', async () => {
    const seen: MessageData<typeof OrderCreated>[] = [];
    const cancelled: string[] = [];
    const handler = messageHandler({
      routes: [
        on(OrderCreated, async (order, ctx) => {
          seen.push(order);
          return ctx.messageId;
        }),
        on(OrderCancelled, async (order) => {
          cancelled.push(order.orderId);
        }),
      ],
    });
    const { broker, queue, consumer } = await consuming(handler);
    const first = message('order.created', created);
    broker.send(queue, [first, first, message('order.cancelled', { orderId: 'o-2' })]);
    await broker.whenIdle();
    expect(seen).toHaveLength(1);
    expect(seen[0]?.placedAt).toBeInstanceOf(Date);
    expect(seen[0]?.placedAt.toISOString()).toBe('2025-01-02T03:04:05.000Z');
    expect(cancelled).toEqual(['o-2']);
    expect(broker.stats(queue)).toMatchObject({ processed: 2, duplicates: 1, deadLettered: 0 });
    expect(await lettersOf(consumer)).toEqual([]);
  });

  it.each([
    ['fails the schema', { ...created, total: -1 }, 'total: '],
    ['is not JSON', '{"orderId": ', 'the body is not valid JSON'],
    ['is JSON of the wrong shape', '[1, 2]', 'expected object'],
  ])(
    'dead-letters a payload that %s with reason INVALID_PAYLOAD and the issues',
    async (_, body, expected) => {
      const route = jest.fn(async () => undefined);
      const { broker, queue, consumer } = await consuming(
        messageHandler({ routes: [on(OrderCreated, route)] }),
      );
      const sent = message('order.created', body);
      broker.send(queue, sent);
      await broker.whenIdle();
      expect(route).not.toHaveBeenCalled();

      const [forwarded] = broker.deadLetters(queue);
      expect(forwarded).toMatchObject({ reason: 'INVALID_PAYLOAD', receiveCount: 1 });
      expect(forwarded?.error).toBeInstanceOf(InvalidPayloadError);
      const issues = (forwarded?.error as InvalidPayloadError).issues;
      expect(issues.length).toBeGreaterThan(0);
      expect(forwarded?.message.headers?.[DEAD_LETTER_HEADERS.reason]).toBe('INVALID_PAYLOAD');

      const letters = await lettersOf(consumer);
      expect(letters).toHaveLength(1);
      expect(letters[0]).toMatchObject({
        messageId: sent.id,
        reason: 'INVALID_PAYLOAD',
        errorCode: 'INVALID_PAYLOAD',
        attempts: 1,
        body: sent.body,
      });
      expect(letters[0]?.errorMessage).toContain('message type "order.created"');
      expect(letters[0]?.errorMessage).toContain(expected);
    },
  );

  it('dead-letters an unknown or missing type with reason UNKNOWN_MESSAGE_TYPE by default', async () => {
    const { broker, queue, consumer } = await consuming(
      messageHandler({ routes: [on(OrderCreated, async () => undefined)] }),
    );
    broker.send(queue, [message('order.shipped', {}), message(undefined, created)]);
    await broker.whenIdle();
    const reasons = broker.deadLetters(queue).map((letter) => letter.reason);
    expect(reasons).toEqual(['UNKNOWN_MESSAGE_TYPE', 'UNKNOWN_MESSAGE_TYPE']);
    for (const letter of broker.deadLetters(queue)) {
      expect(letter.error).toBeInstanceOf(UnknownMessageTypeError);
    }
    const letters = await lettersOf(consumer);
    expect(letters.map((l) => [l.reason, l.errorCode])).toEqual([
      ['UNKNOWN_MESSAGE_TYPE', 'UNKNOWN_MESSAGE_TYPE'],
      ['UNKNOWN_MESSAGE_TYPE', 'UNKNOWN_MESSAGE_TYPE'],
    ]);
    expect(letters.map((l) => l.errorMessage)).toEqual([
      'no route for message type "order.shipped" (routes: "order.created")',
      'the message has no "type" header (routes: "order.created")',
    ]);
  });

  it("acknowledges an unknown type with 'acknowledge', or hands it to a fallback handler", async () => {
    const acking = await consuming(
      messageHandler({
        routes: [on(OrderCreated, async () => 'routed')],
        unknownType: 'acknowledge',
      }),
    );
    acking.broker.send(acking.queue, [message('order.shipped', {}), message(undefined, 'x')]);
    await acking.broker.whenIdle();
    expect(acking.broker.stats(acking.queue)).toMatchObject({ processed: 2, deadLettered: 0 });
    expect(await lettersOf(acking.consumer)).toEqual([]);

    const fallback = jest.fn(async (ctx: HandlerContext) => ctx.message.headers.type);
    const delegating = await consuming(
      messageHandler({ routes: [on(OrderCreated, async () => 'routed')], unknownType: fallback }),
    );
    delegating.broker.send(delegating.queue, message('order.shipped', {}));
    await delegating.broker.whenIdle();
    expect(fallback).toHaveBeenCalledTimes(1);
    expect(delegating.broker.log[0]?.outcome).toMatchObject({
      status: 'processed',
      result: 'order.shipped',
    });
  });

  it('validates what a decode option parsed as it is, and parses bytes or text it returns', async () => {
    const totals: number[] = [];
    const handler = messageHandler({
      routes: [on(OrderCreated, async (order) => void totals.push(order.total))],
    });
    const parsing = await consuming(handler, {
      decode: (body) => JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString()),
    });
    parsing.broker.send(parsing.queue, [
      message('order.created', created),
      message('order.created', { ...created, total: 'x' }),
    ]);
    await parsing.broker.whenIdle();
    expect(totals).toEqual([9.5]);
    expect(parsing.broker.deadLetters(parsing.queue).map((l) => l.reason)).toEqual([
      'INVALID_PAYLOAD',
    ]);

    const unwrapping = await consuming(handler, {
      decode: (body) => Buffer.from(String(body), 'base64'),
    });
    unwrapping.broker.send(unwrapping.queue, {
      ...message('order.created', ''),
      body: Buffer.from(JSON.stringify({ ...created, total: 3 })).toString('base64'),
    });
    await unwrapping.broker.whenIdle();
    expect(totals).toEqual([9.5, 3]);
  });

  it('settles each message of a batch on its own: processed, INVALID_PAYLOAD, UNKNOWN_MESSAGE_TYPE', async () => {
    const inbox = createInbox({ store, consumer: freshId('batch') });
    // Handlers may run twice in a batch (the first pass rolls back when one fails), so the
    // outcomes tell what committed, not a list the handler appends to.
    const handler = messageHandler({
      routes: [on(OrderCreated, async (order) => order.orderId)],
    });
    const typed = (type: string, body: unknown) =>
      envelope(freshId('b'), JSON.stringify(body), { headers: { type } });
    const outcomes = await inbox.processBatch(
      [
        typed('order.created', created),
        typed('order.created', { orderId: 'o-3' }),
        typed('order.unknown', created),
        typed('order.created', { ...created, orderId: 'o-4' }),
      ],
      handler,
    );
    expect(
      outcomes.map((o) =>
        o.status === 'dead-lettered' ? o.reason : o.status === 'processed' ? o.result : o.status,
      ),
    ).toEqual(['o-1', 'INVALID_PAYLOAD', 'UNKNOWN_MESSAGE_TYPE', 'o-4']);
    const letters = await createDeadLetters(store).list({ consumer: inbox.consumer });
    expect(letters.map((l) => l.reason)).toEqual(['INVALID_PAYLOAD', 'UNKNOWN_MESSAGE_TYPE']);
    expect(letters[0]?.errorMessage).toContain('total: ');
  });

  describe.each(ORDER_SCHEMAS)('with a %s schema', (name) => {
    it('routes from outbox.add through the relay and the broker to the typed route', async () => {
      const queue = freshId('orders');
      const Order = await orderType(name, queue);
      const broker = createMemoryBroker();
      brokers.push(broker);
      const relay = createRelay({ store, publisher: broker.publisher() });
      relays.push(relay);
      const totals: unknown[] = [];
      const handler = messageHandler({
        routes: [on(Order, async (order) => void totals.push(order))],
      });
      const consumer = freshId('consumer');
      await broker.consume(queue, { inbox: createInbox({ store, consumer }), handler }).start();
      await store.knex.transaction((trx) => outbox().add(trx, Order, { orderId: 'a', total: 2 }));
      // A payload only a consumer with a stricter schema would refuse, sent straight to it.
      broker.send(queue, {
        id: freshId('raw'),
        body: '{"orderId":""}',
        headers: { type: Order.type },
      });
      while ((await relay.runOnce()).claimed > 0);
      await broker.whenIdle();
      expect(totals).toEqual([{ orderId: 'a', total: 2 }]);
      expect(broker.log.map((r) => r.result).sort()).toEqual(['dead-lettered', 'processed']);
      const [letter] = await lettersOf(consumer);
      expect(letter?.reason).toBe('INVALID_PAYLOAD');
    });
  });

  const outbox = () => createOutbox({ store });
});

describe('route types', () => {
  it('gives a route the schema output type (checked by tsc)', () => {
    const Typed = defineMessage({ type: 't', schema: zodOrder });
    const route = on(Typed, async (order) => {
      const total: number = order.total;
      // @ts-expect-error no such field
      return order.missing ?? total;
    });
    expect(route.message).toBe(Typed);
  });
});

describe('construction and errors', () => {
  it('defineMessage checks its options', () => {
    const misspelt = { type: 't', schema: zodOrder, destinaton: 'd' };
    expect(refusal(() => defineMessage(misspelt)).message).toBe(
      'defineMessage: unknown option `destinaton`; did you mean `destination`?',
    );
    expect(refusal(() => defineMessage({ type: 'x'.repeat(201), schema: zodOrder })).message).toBe(
      'defineMessage: type must be a non-blank string of at most 200 characters',
    );
    expect(refusal(() => defineMessage({ type: 'a\u0000b', schema: zodOrder })).message).toBe(
      'defineMessage: type contains U+0000',
    );
    const notStandard = { parse: (value: unknown) => value };
    expect(
      refusal(() => defineMessage({ type: 't', schema: notStandard as never })).message,
    ).toMatch(/schema must be a Standard Schema/);
    expect(() => defineMessage({ type: 't', schema: zodOrder, destination: ' ' })).toThrow(
      ConfigurationError,
    );
    expect(() => defineMessage({ type: 't', schema: zodOrder, key: 'orderId' as never })).toThrow(
      ConfigurationError,
    );
  });

  it('defineMessage makes an immutable message type; key() answers undefined without a key', () => {
    const Plain = defineMessage({ type: 't', schema: zodOrder });
    expect(Object.isFrozen(Plain)).toBe(true);
    expect(Plain).toMatchObject({ type: 't', destination: undefined });
    expect(Plain.key({ orderId: 'o', total: 1 })).toBeUndefined();
    const Keyed = defineMessage({ type: 't', schema: zodOrder, key: (o) => o.orderId });
    expect(Keyed.key({ orderId: 'o', total: 1 })).toBe('o');
  });

  it('messageHandler and on check their routes', () => {
    const route = on(OrderCreated, async () => undefined);
    expect(refusal(() => messageHandler({ routes: [] })).message).toMatch(/non-empty array/);
    expect(
      refusal(() => messageHandler({ routes: [route, on(OrderCreated, async () => 1)] })).message,
    ).toBe('messageHandler: two routes for message type "order.created"; give each type one route');
    const fake = { message: { type: 'order.created' }, handle: async () => undefined };
    expect(refusal(() => messageHandler({ routes: [fake as never] })).message).toBe(
      'messageHandler: routes[0] is not a route made by on()',
    );
    expect(
      refusal(() => messageHandler({ routes: [route], unknownType: 'ignore' as never })).message,
    ).toMatch(/unknownType must be/);
    expect(
      refusal(() => on({ type: 'order.created', schema: zodOrder } as never, async () => 1))
        .message,
    ).toBe('on: message must be a message type made by defineMessage');
  });

  it('InvalidPayloadError carries plain issues, flattens path segments and counts what it cuts', async () => {
    const Items = defineMessage({
      type: 'items',
      schema: v.object({ items: v.array(v.object({ sku: v.string() })) }),
    });
    const error: unknown = await on(Items, async () => undefined)
      .handle({
        payload: JSON.stringify({ items: Array.from({ length: 150 }, () => ({ sku: 1 })) }),
      } as unknown as HandlerContext)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidPayloadError);
    const invalid = error as InvalidPayloadError;
    expect(invalid).toMatchObject({
      code: 'INVALID_PAYLOAD',
      retriable: false,
      deadLetterReason: 'INVALID_PAYLOAD',
      messageType: 'items',
      details: { messageType: 'items', issueCount: 150 },
    });
    expect(invalid.issues).toHaveLength(100);
    expect(invalid.issues[3]).toEqual({
      message: expect.stringContaining('Expected string'),
      path: ['items', 3, 'sku'],
    });
    expect(JSON.parse(JSON.stringify(invalid.issues[0]))).toEqual(invalid.issues[0]);
    expect(invalid.message).toMatch(
      /^the payload of message type "items" is invalid: items\[0\]\.sku: /,
    );
    expect(invalid.message).toMatch(/\(and 140 more issues\)$/);
  });

  it('UnknownMessageTypeError names the type and the routes', () => {
    const error = new UnknownMessageTypeError('x', ['a', 'b']);
    expect(error).toMatchObject({
      code: 'UNKNOWN_MESSAGE_TYPE',
      retriable: false,
      deadLetterReason: 'UNKNOWN_MESSAGE_TYPE',
      messageType: 'x',
      knownTypes: ['a', 'b'],
    });
    expect(error.message).toBe('no route for message type "x" (routes: "a", "b")');
  });
});
