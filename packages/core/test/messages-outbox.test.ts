import { z } from 'zod';
import {
  InvalidEventError,
  InvalidPayloadError,
  createInbox,
  createOutbox,
  defineMessage,
  deriveMessageId,
  rowsOf,
  type MessageType,
  type Outbox,
} from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { ORDER_SCHEMAS, orderType, zodOrder } from './fixtures/message-schemas';
import { envelope, freshId } from './fixtures/inbox-support';
import { countEffects, createEffectsTable, writeEffect } from '../../../test-support/effects';
import { watchStatements } from './fixtures/statements';

/**
 * `outbox.add(trx, messageType, payload)` and `ctx.outbox.add(messageType, payload)`: the
 * payload is validated before any SQL, the row carries the `type` header, and a refused payload
 * writes nothing and leaves the caller's transaction usable.
 */

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

interface Row {
  destination: string;
  partition_key: string | null;
  message_id: string;
  headers: Record<string, string>;
  payload: Uint8Array;
}

describe.each(ALL_STORE_KINDS)('typed outbox.add on %s', (kind) => {
  let store: TestStore;
  let outbox: Outbox;

  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store);
    outbox = createOutbox({ store });
  });
  afterAll(async () => {
    await store.dispose();
  });

  async function rowsTo(destination: string): Promise<Row[]> {
    const result = await store.knex.raw(
      `select destination, partition_key, message_id, headers, payload
         from ${store.names.table('outbox')} where destination = ? order by id`,
      [destination],
    );
    return rowsOf<Row>(result);
  }
  const json = (row: Row | undefined): unknown =>
    JSON.parse(Buffer.from(row?.payload ?? []).toString('utf8'));

  describe.each(ORDER_SCHEMAS)('with a %s schema', (name) => {
    // A destination of its own per validator and test, so row counts are this test's.
    let message: MessageType;
    let destination: string;
    beforeEach(async () => {
      destination = freshId('orders');
      message = await orderType(name, destination);
    });

    it('writes a valid payload as JSON with the type header and the key, and returns its id', async () => {
      const payload = { orderId: 'o-1', total: 12.5 };
      const id = await store.knex.transaction((trx) => outbox.add(trx, message, payload));
      expect(typeof id).toBe('string');
      const rows = await rowsTo(destination);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        destination,
        partition_key: 'o-1',
        message_id: id,
        headers: { type: message.type, 'content-type': 'application/json', 'message-id': id },
      });
      expect(json(rows[0])).toEqual(payload);
    });

    it.each([
      ['a wrong field type', { orderId: 'o-2', total: '12' }],
      ['a missing field', { orderId: 'o-3' }],
      ['a value out of range', { orderId: '', total: -1 }],
      ['not an object', 'order'],
    ])(
      'refuses %s before any SQL, writes nothing, and the transaction stays usable',
      async (_, payload) => {
        const effectId = freshId('effect');
        let queries = 0;
        const stopWatching = watchStatements(store.knex, () => (queries += 1));
        await store.knex.transaction(async (trx) => {
          const sent = queries;
          const error: unknown = await outbox.add(trx, message, payload).catch((e: unknown) => e);
          stopWatching();
          expect(queries).toBe(sent);
          expect(error).toBeInstanceOf(InvalidEventError);
          expect(error).toMatchObject({ code: 'INVALID_EVENT', field: 'payload', index: 0 });
          const cause = (error as InvalidEventError).cause;
          expect(cause).toBeInstanceOf(InvalidPayloadError);
          const issues = (cause as InvalidPayloadError).issues;
          expect(issues.length).toBeGreaterThan(0);
          for (const issue of issues) {
            expect(typeof issue.message).toBe('string');
            expect(Array.isArray(issue.path)).toBe(true);
          }
          expect((error as Error).message).toContain(issues[0]?.message);
          await writeEffect(trx, store, effectId);
        });
        expect(await rowsTo(destination)).toEqual([]);
        expect(await countEffects(store, effectId)).toBe(1);
      },
    );
  });

  describe.each(ORDER_SCHEMAS.filter((name) => name.endsWith('async')))(
    'with an async refinement (%s)',
    (name) => {
      it('waits for the refinement: a refused id writes nothing, an allowed one is written', async () => {
        const destination = freshId('orders');
        const message = await orderType(name, destination);
        await expect(
          store.knex.transaction((trx) =>
            outbox.add(trx, message, { orderId: 'blocked', total: 1 }),
          ),
        ).rejects.toMatchObject({ field: 'payload', message: expect.stringContaining('blocked') });
        await store.knex.transaction((trx) =>
          outbox.add(trx, message, { orderId: 'ok', total: 1 }),
        );
        expect((await rowsTo(destination)).map(json)).toEqual([{ orderId: 'ok', total: 1 }]);
      });
    },
  );

  it('writes the input, not the output, of a transforming schema; strings go as JSON too', async () => {
    const destination = freshId('t');
    const Shout = defineMessage({
      type: 'shout',
      schema: z.object({ word: z.string().transform((w) => w.toUpperCase()) }),
      destination,
    });
    const Word = defineMessage({ type: 'word', schema: z.string(), destination });
    await store.knex.transaction(async (trx) => {
      await outbox.add(trx, Shout, { word: 'hey' });
      await outbox.add(trx, Word, 'plain "text"');
    });
    const rows = await rowsTo(destination);
    expect(rows.map(json)).toEqual([{ word: 'hey' }, 'plain "text"']);
    expect(rows[1]?.headers).toMatchObject({ type: 'word', 'content-type': 'application/json' });
  });

  it('takes destination, key, headers and messageId from the options over the message type', async () => {
    const destination = freshId('over');
    const Order = defineMessage({
      type: 'order.created',
      schema: zodOrder,
      destination: 'never-used',
      key: (o) => o.orderId,
    });
    const messageId = freshId('id');
    const [id, unkeyed] = await store.knex.transaction(async (trx) => [
      await outbox.add(
        trx,
        Order,
        { orderId: 'o', total: 1 },
        { destination, key: 'k', headers: { 'x-a': '1', type: 'order.created' }, messageId },
      ),
      await outbox.add(trx, Order, { orderId: 'o', total: 2 }, { destination, key: null }),
    ]);
    expect(id).toBe(messageId);
    const rows = await rowsTo(destination);
    expect(rows[0]).toMatchObject({
      partition_key: 'k',
      message_id: messageId,
      headers: { 'x-a': '1', type: 'order.created' },
    });
    expect(rows[1]).toMatchObject({ partition_key: null, message_id: unkeyed });
  });

  it('refuses, before any SQL, what cannot be written', async () => {
    const NoDestination = defineMessage({ type: 'nowhere', schema: zodOrder });
    const Throwing = defineMessage({
      type: 'throwing-key',
      schema: zodOrder,
      destination: 'd',
      key: () => {
        throw new Error('no key today');
      },
    });
    const order = { orderId: 'o', total: 1 };
    let queries = 0;
    const stopWatching = watchStatements(store.knex, () => (queries += 1));
    await store.knex.transaction(async (trx) => {
      const sent = queries;
      const refusal = (call: Promise<unknown>): Promise<unknown> => call.catch((e: unknown) => e);
      expect(await refusal(outbox.add(trx, NoDestination, order))).toMatchObject({
        field: 'destination',
      });
      expect(await refusal(outbox.add(trx, Throwing, order))).toMatchObject({
        field: 'key',
        message: expect.stringContaining('no key today'),
      });
      const conflicting = outbox.add(trx, NoDestination, order, {
        destination: 'd',
        headers: { type: 'other' },
      });
      expect(await refusal(conflicting)).toMatchObject({ field: 'headers' });
      // Plain JavaScript may misspell an option: it is named, with the one it meant.
      const misspelt: object = { destination: 'd', messageID: 'x' };
      expect(await refusal(outbox.add(trx, NoDestination, order, misspelt))).toMatchObject({
        field: 'options',
        message: expect.stringContaining('did you mean `messageId`?'),
      });
      stopWatching();
      expect(queries).toBe(sent);
    });
  });

  it('continues the deterministic index of a handler across both forms of ctx.outbox.add', async () => {
    const destination = freshId('h');
    const Order = defineMessage({ type: 'order.created', schema: zodOrder, destination });
    const consumer = freshId('consumer');
    const inbox = createInbox({ store, consumer });
    const incoming = freshId('in');
    const outcome = await inbox.process(envelope(incoming), async (ctx) => {
      const first = await ctx.outbox.add(Order, { orderId: 'a', total: 1 });
      const [second] = await ctx.outbox.add({ destination, payload: 'raw' });
      const third = await ctx.outbox.add(Order, { orderId: 'b', total: 2 }, { key: 'b' });
      const refused = await ctx.outbox
        .add(Order, { orderId: 'c', total: 0 })
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ field: 'payload' });
      return [first, second, third];
    });
    const expected = [0, 1, 2].map((i) => deriveMessageId(consumer, incoming, i, 'default'));
    expect(outcome).toMatchObject({ status: 'processed', result: expected });
    const rows = await rowsTo(destination);
    expect(rows.map((r) => r.message_id)).toEqual(expected);
    expect(rows[0]?.headers).toMatchObject({ type: 'order.created', 'causation-id': incoming });
    expect(rows[2]?.partition_key).toBe('b');
  });
});

describe('compile-time checks of the typed forms', () => {
  // Never run: the type checker (`pnpm typecheck`) is the test.
  const Order = defineMessage({ type: 'order.created', schema: zodOrder, destination: 'd' });
  async function typed(outbox: Outbox, trx: Parameters<Outbox['add']>[0]): Promise<string> {
    // @ts-expect-error total must be a number
    await outbox.add(trx, Order, { orderId: 'o', total: '1' });
    // @ts-expect-error orderId is required
    await outbox.add(trx, Order, { total: 1 });
    const ids: string[] = await outbox.add(trx, { destination: 'd', payload: 1 });
    return ids[0] ?? (await outbox.add(trx, Order, { orderId: 'o', total: 1 }));
  }
  it('has a typed signature (checked by tsc)', () => {
    expect(typeof typed).toBe('function');
  });
});
