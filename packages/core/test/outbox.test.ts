import { Client } from 'pg';
import {
  createMemoryPublisher,
  createOutbox,
  createRelay,
  deriveMessageId,
  hasErrorCode,
  isJustonceError,
  outboxChannel,
  rowsOf,
  type OutboxEvent,
  type Store,
} from '../src';
import { STORE_KINDS, databaseUrl, openTestStore } from './db';

interface Row {
  id: string;
  destination: string;
  partition_key: string | null;
  message_id: string;
  headers: Record<string, string>;
  payload: Uint8Array;
  status: string;
}

async function rows(store: Store): Promise<Row[]> {
  return rowsOf<Row>(
    await store.knex.raw(`select * from ${store.names.table('outbox')} order by id`),
  );
}

describe.each(STORE_KINDS)('outbox on %s', (kind) => {
  let store: Store & { dispose(): Promise<void> };
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });
  beforeEach(async () => {
    await store.knex.raw(`delete from ${store.names.table('outbox')}`);
  });

  it('publishes a committed event exactly once and a rolled-back one never', async () => {
    const outbox = createOutbox({ store });
    const publisher = createMemoryPublisher();
    const relay = createRelay({ store, publisher, notify: false, onPublished: 'keep' });
    const [committed] = await store.knex.transaction((trx) =>
      outbox.add(trx, { destination: 'orders', key: 'o-1', payload: { n: 1 } }),
    );
    await expect(
      store.knex.transaction(async (trx) => {
        await outbox.add(trx, { destination: 'orders', key: 'o-1', payload: { n: 2 } });
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');

    expect(await relay.runOnce()).toMatchObject({ claimed: 1, published: 1 });
    expect(await relay.runOnce()).toMatchObject({ claimed: 0 });
    expect(publisher.published.map((m) => m.messageId)).toEqual([committed]);
    expect((await rows(store)).map((r) => r.status)).toEqual(['published']);
  });

  it('stores JSON, strings and bytes, and sets the content type only for JSON', async () => {
    const outbox = createOutbox({ store });
    const bytes = new Uint8Array([0, 1, 2, 255]);
    await store.knex.transaction((trx) =>
      outbox.add(trx, [
        { destination: 'd', payload: { a: [1, 'x'] }, headers: { custom: 'yes' } },
        { destination: 'd', payload: 'plain text' },
        { destination: 'd', payload: bytes, messageId: 'explicit-id' },
      ]),
    );
    const [json, text, raw] = await rows(store);
    expect(Buffer.from(json!.payload).toString()).toBe('{"a":[1,"x"]}');
    expect(json!.headers).toMatchObject({ 'content-type': 'application/json', custom: 'yes' });
    expect(json!.headers['message-id']).toBe(json!.message_id);
    expect(Buffer.from(text!.payload).toString()).toBe('plain text');
    expect(text!.headers['content-type']).toBeUndefined();
    expect([...Buffer.from(raw!.payload)]).toEqual([0, 1, 2, 255]);
    expect(raw!.message_id).toBe('explicit-id');
  });

  it('derives the same ids for a retried handler and propagates causation headers', async () => {
    const outbox = createOutbox({ store });
    const cause = {
      consumer: 'billing',
      messageId: 'in-42',
      scope: 'tenant-a',
      correlationId: 'corr-7',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    };
    const events: OutboxEvent[] = [
      { destination: 'd', key: 'k', payload: 1 },
      { destination: 'd', key: 'k', payload: 2 },
    ];
    // First attempt rolls back; the retry must emit the very same ids.
    let firstIds: string[] = [];
    await expect(
      store.knex.transaction(async (trx) => {
        firstIds = await outbox.add(trx, events, { cause, startIndex: 3 });
        throw new Error('handler crashed');
      }),
    ).rejects.toThrow('handler crashed');
    const retryIds = await store.knex.transaction((trx) =>
      outbox.add(trx, events, { cause, startIndex: 3 }),
    );
    expect(retryIds).toEqual(firstIds);
    expect(retryIds).toEqual([
      deriveMessageId('billing', 'in-42', 3, 'tenant-a'),
      deriveMessageId('billing', 'in-42', 4, 'tenant-a'),
    ]);
    const [first] = await rows(store);
    expect(first!.headers).toMatchObject({
      'message-id': retryIds[0],
      'causation-id': 'in-42',
      'correlation-id': 'corr-7',
      traceparent: cause.traceparent,
      tenant: 'tenant-a',
    });
  });

  it('refuses anything but an open knex transaction', async () => {
    const outbox = createOutbox({ store });
    const event = { destination: 'd', payload: 1 };
    const attempts: unknown[] = [store.knex, null, undefined, {}, 'trx'];
    for (const given of attempts) {
      const error = await outbox
        .add(given as never, event)
        .then(() => null)
        .catch((e: unknown) => e);
      expect(hasErrorCode(error, 'NOT_A_TRANSACTION')).toBe(true);
    }
    const trx = await store.knex.transaction();
    await trx.commit();
    await expect(outbox.add(trx, event)).rejects.toMatchObject({ code: 'NOT_A_TRANSACTION' });
    expect(await rows(store)).toHaveLength(0);
  });

  it('refuses bad events with typed errors inside the caller transaction, writing nothing', async () => {
    const outbox = createOutbox({ store, maxKeyLength: 16 });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const bad: Array<[string, OutboxEvent]> = [
      ['destination', { destination: '', payload: 1 }],
      ['destination', { payload: 1 } as unknown as OutboxEvent],
      ['payload', { destination: 'd', payload: circular }],
      ['payload', { destination: 'd', payload: 10n }],
      ['payload', { destination: 'd', payload: undefined }],
      ['key', { destination: 'd', key: 'k'.repeat(17), payload: 1 }],
      ['headers', { destination: 'd', payload: 1, headers: { n: 1 } as never }],
      ['messageId', { destination: 'd', payload: 1, messageId: '' }],
    ];
    for (const [field, event] of bad) {
      await store.knex.transaction(async (trx) => {
        const error = await outbox
          .add(trx, [{ destination: 'ok', payload: 'fine' }, event])
          .then(() => null)
          .catch((e: unknown) => e);
        expect(isJustonceError(error)).toBe(true);
        expect(error).toMatchObject({ code: 'INVALID_EVENT', field, index: 1 });
        // The caller's transaction is still usable: nothing was sent to the database.
        await trx.raw('select 1');
      });
    }
    expect(await rows(store)).toHaveLength(0);
  });

  it('reports a message id that is already in the outbox and leaves the transaction usable', async () => {
    const outbox = createOutbox({ store });
    await store.knex.transaction((trx) =>
      outbox.add(trx, { destination: 'd', payload: 1, messageId: 'same' }),
    );
    await store.knex.transaction(async (trx) => {
      await expect(
        outbox.add(trx, [
          { destination: 'd', payload: 2, messageId: 'new' },
          { destination: 'd', payload: 3, messageId: 'same' },
        ]),
      ).rejects.toMatchObject({ code: 'DUPLICATE_MESSAGE_ID', messageIds: ['same'] });
      await trx.raw('select 1');
    });
    expect((await rows(store)).map((r) => r.message_id)).toEqual(['same', 'new']);
  });

  it('adds a thousand events in one call', async () => {
    const outbox = createOutbox({ store });
    const events = Array.from({ length: 1500 }, (_, i) => ({
      destination: 'bulk',
      key: `k${i % 7}`,
      payload: { i },
    }));
    const ids = await store.knex.transaction((trx) => outbox.add(trx, events));
    expect(new Set(ids).size).toBe(1500);
    expect(await rows(store)).toHaveLength(1500);
  });

  it('validates its options', () => {
    expect(() => createOutbox({ store, maxKeyLength: 0 })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
    expect(() => createOutbox({} as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
  });
});

describe('outbox notifications on postgres', () => {
  let store: Store & { dispose(): Promise<void> };
  let client: Client;
  beforeAll(async () => {
    store = await openTestStore('postgres');
    client = new Client({ connectionString: databaseUrl() });
    await client.connect();
    await client.query(`listen "${outboxChannel(store.names)}"`);
  });
  afterAll(async () => {
    await client.end();
    await store.dispose();
  });

  it('notifies at commit, not before and not on rollback', async () => {
    const outbox = createOutbox({ store });
    const received: number[] = [];
    client.on('notification', () => received.push(Date.now()));
    const notified = (): Promise<void> =>
      new Promise((resolve) => client.once('notification', () => resolve()));

    await expect(
      store.knex.transaction(async (trx) => {
        await outbox.add(trx, { destination: 'd', payload: 1 });
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');

    let insideCount = -1;
    const next = notified();
    await store.knex.transaction(async (trx) => {
      await outbox.add(trx, [
        { destination: 'd', payload: 1 },
        { destination: 'd', payload: 2 },
      ]);
      await outbox.add(trx, { destination: 'd', payload: 3 });
      // A round trip on the listening connection flushes anything already delivered.
      await client.query('select 1');
      insideCount = received.length;
    });
    await next;
    expect(insideCount).toBe(0);
    await client.query('select 1');
    // Identical notifications of one transaction are folded into one.
    expect(received).toHaveLength(1);
  });

  it('sends no notification when notify is off', async () => {
    const outbox = createOutbox({ store, notify: false });
    let count = 0;
    const listener = (): void => {
      count += 1;
    };
    client.on('notification', listener);
    await store.knex.transaction((trx) => outbox.add(trx, { destination: 'd', payload: 1 }));
    await client.query('select 1');
    client.off('notification', listener);
    expect(count).toBe(0);
  });
});
