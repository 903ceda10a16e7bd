import {
  ConfigurationError,
  DeadLetterNotRedeliverableError,
  FinalError,
  createAdmin,
  createInbox,
  createOutbox,
  createRelay,
  hasErrorCode,
  type Admin,
  type HandlerContext,
  type Relay,
} from '../src';
import { createMemoryBroker, type MemoryBroker, type MemoryConsumer } from '../src/testing';
import { countEffects, createEffectsTable, writeEffect } from '../../../test-support/effects';
import { waitFor } from '../../../test-support/wait-for';
import { ALL_STORE_VARIANTS, openTestStore } from './db';
import { envelope, freshId } from './fixtures/inbox-support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

const SOON = { timeoutMs: 15_000, intervalMs: 20 };

describe.each(ALL_STORE_VARIANTS)('redeliverDeadLetter on %s', (_label, kind, options) => {
  let store: TestStore;
  let admin: Admin;
  let broker: MemoryBroker;
  let relay: Relay;
  let consumer: MemoryConsumer;
  /** Messages whose first delivery fails for good; later ones succeed. */
  const failFirst = new Set<string>();
  const inbox = () => createInbox({ store, consumer: 'billing' });

  beforeAll(async () => {
    store = await openTestStore(kind, options);
    await createEffectsTable(store);
    admin = createAdmin(store);
    broker = createMemoryBroker({ crashRedeliveryDelayMs: 1, maxRetryDelayMs: 10 });
    // On PostgreSQL the relay polls once a minute only: it must be woken by the notification
    // that redeliverDeadLetter sends. PGlite has no second session to notify and MySQL no
    // notifications at all, so there it polls.
    relay = createRelay({
      store,
      publisher: broker.publisher(),
      onPublished: 'keep',
      pollIntervalMs: kind === 'postgres' ? 60_000 : 50,
    });
    const handler = async (ctx: HandlerContext) => {
      if (failFirst.delete(ctx.messageId)) throw new FinalError('order not found (yet)');
      await writeEffect(ctx.trx, store, ctx.messageId, { consumer: 'billing' });
    };
    consumer = broker.consume('orders', { inbox: inbox(), handler, concurrency: 2 });
    await consumer.start();
    relay.start();
  });
  afterAll(async () => {
    await relay.stop({ timeoutMs: 5_000 });
    await broker.close();
    await store.dispose();
  });

  it('puts a dead letter back through the outbox; the running consumer handles it once', async () => {
    const [messageId] = await store.knex.transaction((trx) =>
      createOutbox({ store }).add(trx, {
        destination: 'orders',
        key: 'order-7',
        headers: { 'x-tenant': 't1' },
        payload: { order: 7 },
      }),
    );
    failFirst.add(messageId!);
    const [letter] = await waitFor(
      'the message to be dead-lettered',
      async () => {
        const letters = await admin.deadLetters.list({ consumer: 'billing' });
        return letters.length > 0 ? letters : undefined;
      },
      SOON,
    );
    expect(letter).toMatchObject({ messageId, reason: 'NON_RETRIABLE', key: 'order-7' });
    expect(letter!.delivery.source).toBe('orders');
    expect(await countEffects(store, messageId)).toBe(0);
    expect((await admin.status()).deadLetters).toEqual([
      expect.objectContaining({ consumer: 'billing', reason: 'NON_RETRIABLE', count: 1 }),
    ]);

    // The event's published row is still kept (onPublished: 'keep'): the redelivery replaces it.
    const rowId = await admin.redeliverDeadLetter(letter!.id);
    const row = await admin.outbox.get(rowId);
    expect(row).toMatchObject({ messageId, destination: 'orders', key: 'order-7' });
    expect(row!.headers['x-tenant']).toBe('t1');
    expect(JSON.parse(Buffer.from(row!.payload).toString())).toEqual({ order: 7 });

    await waitFor(
      'the redelivered message to be handled',
      async () => ((await countEffects(store, messageId)) === 1 ? true : undefined),
      SOON,
    );
    expect((await admin.deadLetters.get(letter!.id))!.requeuedAt).toBeInstanceOf(Date);
    expect((await admin.status()).deadLetters).toEqual([]);

    // Redelivering the same letter again is allowed: the event is published once more and
    // the consumer acknowledges it as a duplicate. The effect stays at one.
    const duplicatesBefore = broker.stats('orders').duplicates;
    await admin.redeliverDeadLetter(letter!.id);
    await waitFor(
      'the second redelivery to be acknowledged as a duplicate',
      () => broker.stats('orders').duplicates > duplicatesBefore,
      SOON,
    );
    expect(await countEffects(store, messageId)).toBe(1);
    const outboxRows = await admin.outbox.list({ status: 'pending', ids: [rowId] });
    expect(outboxRows).toEqual([]);
  });

  it('refuses a letter without a message id or a destination, changing nothing', async () => {
    const direct = inbox();
    // Processed straight through the inbox: no delivery source, and one without an id.
    await direct.process(envelope(undefined, 'no id'), () => Promise.resolve());
    const noSource = freshId('nosrc');
    await direct.process(envelope(noSource, 'x'), () => {
      throw new FinalError('bad');
    });
    const letters = await admin.deadLetters.list({ consumer: 'billing', includeRequeued: false });
    const missingId = letters.find((l) => l.reason === 'MISSING_MESSAGE_ID')!;
    const withoutSource = letters.find((l) => l.messageId === noSource)!;

    const refused = await admin.redeliverDeadLetter(missingId.id).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DeadLetterNotRedeliverableError);
    expect(hasErrorCode(refused, 'DEAD_LETTER_NOT_REDELIVERABLE')).toBe(true);
    expect((await admin.deadLetters.get(missingId.id))!.requeuedAt).toBeNull();

    const noDestination = await admin
      .redeliverDeadLetter(withoutSource.id)
      .catch((e: unknown) => e);
    expect(noDestination).toBeInstanceOf(ConfigurationError);
    expect((noDestination as Error).message).toMatch(/pass the destination option/);
    expect((await admin.deadLetters.get(withoutSource.id))!.requeuedAt).toBeNull();
    await expect(
      admin.redeliverDeadLetter(withoutSource.id, { destinaton: 'x' } as never),
    ).rejects.toThrow(/unknown option `destinaton`/);

    // With a destination it goes to that queue, and the consumer handles it once.
    const rowId = await admin.redeliverDeadLetter(withoutSource.id, { destination: 'orders' });
    expect((await admin.outbox.get(rowId))!.destination).toBe('orders');
    await waitFor(
      'the letter to be handled',
      async () => ((await countEffects(store, noSource)) === 1 ? true : undefined),
      SOON,
    );
  });
});
