import { Client } from 'pg';
import {
  createMemoryPublisher,
  createOutbox,
  createRelay,
  deriveMessageId,
  hasErrorCode,
  InvalidTransactionError,
  isJustonceError,
  outboxChannel,
  rowsOf,
  type AddOptions,
  type OutboxEvent,
  type Store,
} from '../src';
import type { EncodedEvent } from '../src/outbox/encode';
import { statements } from '../src/outbox/insert-all';
import { ALL_STORE_VARIANTS, databaseUrl, openTestStore } from './db';
import { waitFor } from '../../../test-support/wait-for';

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

describe.each(ALL_STORE_VARIANTS)('outbox on %s', (_label, kind, options) => {
  let store: Store & { dispose(): Promise<void> };
  beforeAll(async () => {
    store = await openTestStore(kind, options);
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

  it('refuses a knex transaction in which a statement failed with reason failed, not a driver error', async () => {
    const outbox = createOutbox({ store });
    if (kind === 'mysql') {
      // MySQL takes back only the failed statement: the transaction goes on, and so does add.
      const [id] = await store.knex.transaction(async (trx) => {
        await trx.raw('select * from no_such_table').catch(() => undefined);
        return outbox.add(trx, { destination: 'd', payload: 1 });
      });
      expect((await rows(store)).map((r) => r.message_id)).toEqual([id]);
      return;
    }
    const refused = await store.knex
      .transaction(async (trx) => {
        await trx.raw('select 1 / 0').catch(() => undefined);
        return outbox.add(trx, { destination: 'd', payload: 1 }).catch((e: unknown) => e);
      })
      .catch(() => undefined);
    expect(refused).toBeInstanceOf(InvalidTransactionError);
    expect(refused).toMatchObject({ code: 'NOT_A_TRANSACTION', reason: 'failed' });
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

  it('reports a message id that is already in the outbox, writing nothing of that call', async () => {
    const outbox = createOutbox({ store });
    await store.knex.transaction((trx) =>
      outbox.add(trx, { destination: 'd', payload: 1, messageId: 'same' }),
    );
    await store.knex.transaction(async (trx) => {
      await outbox.add(trx, { destination: 'd', payload: 0, messageId: 'before' });
      await expect(
        outbox.add(trx, [
          { destination: 'd', payload: 2, messageId: 'new' },
          { destination: 'd', payload: 3, messageId: 'same' },
        ]),
      ).rejects.toMatchObject({ code: 'DUPLICATE_MESSAGE_ID', messageIds: ['same'] });
      // The transaction is still usable, and an earlier call of it is kept.
      await trx.raw('select 1');
    });
    expect((await rows(store)).map((r) => r.message_id)).toEqual(['same', 'before']);
  });

  // PGlite has one connection: no second transaction to race.
  if (kind !== 'pglite') {
    it.each(['commits', 'rolls back'] as const)(
      'waits for a transaction adding the same id, then skips or takes it as that one %s',
      async (outcome) => {
        const outbox = createOutbox({ store });
        const first = await store.knex.transaction();
        await outbox.add(first, { destination: 'd', payload: 1, messageId: 'race' });
        const second = store.knex.transaction((trx) =>
          outbox.add(trx, [
            { destination: 'd', payload: 2, messageId: 'other' },
            { destination: 'd', payload: 3, messageId: 'race' },
          ]),
        );
        // The second insert waits on the first transaction's row until it ends.
        await waitFor(
          'the second insert to wait for the first transaction',
          async () => {
            const waiting = rowsOf(
              await store.knex.raw(
                kind === 'mysql'
                  ? `select 1 from information_schema.innodb_trx
                     where trx_state = 'LOCK WAIT' and trx_query like ?`
                  : `select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like ?`,
                [`%${store.names.table('outbox')}%`],
              ),
            );
            return waiting.length > 0;
          },
          // InnoDB refreshes innodb_trx only when it was not read for 100 ms.
          { timeoutMs: 10_000, intervalMs: kind === 'mysql' ? 200 : 10 },
        );
        if (outcome === 'commits') {
          await first.commit();
          await expect(second).rejects.toMatchObject({
            code: 'DUPLICATE_MESSAGE_ID',
            messageIds: ['race'],
          });
          expect(
            (await rows(store)).map((r) => [
              r.message_id,
              JSON.parse(Buffer.from(r.payload).toString()) as unknown,
            ]),
          ).toEqual([['race', 1]]);
        } else {
          await first.rollback();
          await expect(second).resolves.toHaveLength(2);
          expect((await rows(store)).map((r) => r.message_id).sort()).toEqual(['other', 'race']);
        }
      },
    );
  }

  it('undoes every statement of a call over 1000 events when a later one finds a duplicate', async () => {
    const outbox = createOutbox({ store });
    await store.knex.transaction((trx) =>
      outbox.add(trx, { destination: 'd', payload: 1, messageId: 'taken' }),
    );
    const events: OutboxEvent[] = Array.from({ length: 1500 }, (_, i) => ({
      destination: 'bulk',
      payload: { i },
      messageId: i === 1400 ? 'taken' : `bulk-${i}`,
    }));
    await store.knex.transaction(async (trx) => {
      await expect(outbox.add(trx, events)).rejects.toMatchObject({
        code: 'DUPLICATE_MESSAGE_ID',
        messageIds: ['taken'],
      });
      await trx.raw('select 1');
    });
    expect((await rows(store)).map((r) => r.message_id)).toEqual(['taken']);
  });

  it('undoes every statement of a call over 1000 events when a later one fails', async () => {
    const outbox = createOutbox({ store });
    const table = store.names.table('outbox');
    const refuse = store.names.table('refuse_explode');
    // A trigger stands in for any database error in the second statement of the call.
    if (kind === 'mysql') {
      await store.knex.raw(
        `create trigger ${refuse} before insert on ${table} for each row
         begin
           if new.destination = 'explode' then
             signal sqlstate '45000' set message_text = 'refused by trigger';
           end if;
         end`,
      );
    } else {
      await store.knex.raw(`create function ${refuse}() returns trigger language plpgsql as $$
      begin
        if new.destination = 'explode' then raise exception 'refused by trigger'; end if;
        return new;
      end $$`);
      await store.knex.raw(
        `create trigger refuse_explode before insert on ${table} for each row execute function ${refuse}()`,
      );
    }
    try {
      const events: OutboxEvent[] = Array.from({ length: 1500 }, (_, i) => ({
        destination: i === 1200 ? 'explode' : 'bulk',
        payload: i,
      }));
      await store.knex.transaction(async (trx) => {
        await outbox.add(trx, { destination: 'd', payload: 0, messageId: 'kept' });
        await expect(outbox.add(trx, events)).rejects.toThrow('refused by trigger');
        // The call's savepoint was rolled back: the caller's transaction goes on.
        await trx.raw('select 1');
      });
      expect((await rows(store)).map((r) => r.message_id)).toEqual(['kept']);
    } finally {
      if (kind === 'mysql') {
        await store.knex.raw(`drop trigger ${refuse}`);
      } else {
        await store.knex.raw(`drop trigger refuse_explode on ${table}`);
        await store.knex.raw(`drop function ${refuse}()`);
      }
    }
  });

  it('refuses a message id given twice in one call before any SQL', async () => {
    const outbox = createOutbox({ store });
    await store.knex.transaction(async (trx) => {
      await expect(
        outbox.add(trx, [
          { destination: 'd', payload: 1, messageId: 'twice' },
          { destination: 'd', payload: 2 },
          { destination: 'd', payload: 3, messageId: 'twice' },
        ]),
      ).rejects.toMatchObject({ code: 'INVALID_EVENT', field: 'messageId', index: 2 });
      await trx.raw('select 1');
    });
    expect(await rows(store)).toHaveLength(0);
  });

  it('refuses text PostgreSQL cannot store exactly, and malformed calls from JavaScript', async () => {
    const outbox = createOutbox({ store });
    const cause = { consumer: 'c', messageId: 'm' };
    const bad: Array<[string, number, unknown, unknown]> = [
      ['destination', 0, { destination: 'a\u0000b', payload: 1 }, undefined],
      ['destination', 0, { destination: '\ud800', payload: 1 }, undefined],
      ['key', 0, { destination: 'd', key: 'k\u0000', payload: 1 }, undefined],
      ['messageId', 0, { destination: 'd', messageId: 'id\udc00', payload: 1 }, undefined],
      ['headers', 0, { destination: 'd', headers: { 'x\u0000': 'v' }, payload: 1 }, undefined],
      ['headers', 0, { destination: 'd', headers: { x: 'v\ud800' }, payload: 1 }, undefined],
      ['headers', 0, { destination: 'd', headers: new Map([['x', 'v']]), payload: 1 }, undefined],
      ['payload', 0, { destination: 'd', payload: 'half a pair \ud83d' }, undefined],
      ['cause', 0, { destination: 'd', payload: 1 }, { cause: { ...cause, scope: 't\u0000' } }],
      ['cause', 0, { destination: 'd', payload: 1 }, { cause: { ...cause, traceparent: 7 } }],
      ['cause', 0, { destination: 'd', payload: 1 }, { cause: { ...cause, scope: 1n } }],
      ['cause', 0, { destination: 'd', payload: 1 }, { cause: () => cause }],
      ['startIndex', 0, { destination: 'd', payload: 1 }, { cause, startIndex: 2 ** 53 }],
      ['options', 0, { destination: 'd', payload: 1 }, 5],
      ['event', 0, null, undefined],
      ['event', 0, 7, undefined],
      ['event', 1, [{ destination: 'd', payload: 1 }, null], undefined],
      // A hole in a sparse array.
      ['event', 0, Object.assign([], { 1: { destination: 'd', payload: 1 } }), undefined],
    ];
    for (const [field, index, events, options] of bad) {
      await store.knex.transaction(async (trx) => {
        const error = await outbox
          .add(trx, events as OutboxEvent[], options as AddOptions)
          .then(() => null)
          .catch((e: unknown) => e);
        expect(error).toMatchObject({ code: 'INVALID_EVENT', field, index });
        await trx.raw('select 1');
      });
    }
    expect(await rows(store)).toHaveLength(0);
    // U+0000 is fine in a string payload (bytes), JSON escapes anything, and null options are none.
    const ids = await store.knex.transaction((trx) =>
      outbox.add(
        trx,
        [
          { destination: 'd', payload: 'nul \u0000 inside' },
          { destination: 'd', payload: { s: '\u0000 \ud800' }, headers: { ['__proto__']: 'kept' } },
        ],
        null as unknown as AddOptions,
      ),
    );
    const [text, json] = await rows(store);
    expect(ids).toHaveLength(2);
    expect(Buffer.from(text!.payload).toString()).toBe('nul \u0000 inside');
    expect(JSON.parse(Buffer.from(json!.payload).toString())).toEqual({ s: '\u0000 \ud800' });
    expect(Object.getOwnPropertyDescriptor(json!.headers, '__proto__')?.value).toBe('kept');
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

  it('stores destinations, keys and ids of the longest length, in multi-byte characters', async () => {
    const outbox = createOutbox({ store });
    // Lengths are JavaScript's (UTF-16 units), keys' UTF-8 bytes: 255 of them fit 255 characters.
    const destination = '\u20AC'.repeat(255);
    const messageId = `${'\u{1F600}'.repeat(127)}x`;
    const key = `${'\u00E9'.repeat(127)}x`;
    const [id] = await store.knex.transaction((trx) =>
      outbox.add(trx, { destination, key, payload: 1, messageId }),
    );
    expect(id).toBe(messageId);
    const [row] = await rows(store);
    expect(row).toMatchObject({ destination, partition_key: key, message_id: messageId });
  });

  it('keeps ids and keys apart that differ only in case or trailing spaces, or by a 4-byte character', async () => {
    const outbox = createOutbox({ store });
    const ids = ['id', 'Id', 'id ', 'id  ', 'id\u{1F600}'];
    const keys = ['k', 'K', 'k ', 'k\u{1F600}'];
    await store.knex.transaction((trx) =>
      outbox.add(trx, [
        ...ids.map((messageId, i) => ({ destination: 'd', key: 'ids', payload: i, messageId })),
        ...keys.flatMap((key) => [0, 1].map((n) => ({ destination: 'd', key, payload: n }))),
      ]),
    );
    await expect(
      store.knex.transaction((trx) =>
        // Under its key: on a distributable schema ids are unique per distribution key.
        outbox.add(trx, { destination: 'd', key: 'ids', payload: 0, messageId: 'id ' }),
      ),
    ).rejects.toMatchObject({ code: 'DUPLICATE_MESSAGE_ID' });
    const publisher = createMemoryPublisher();
    const relay = createRelay({ store, publisher, notify: false, batchSize: 3, claimHoldMs: 0 });
    while ((await relay.runOnce()).claimed > 0);
    expect(publisher.byKey('ids').map((m) => m.messageId)).toEqual(ids);
    for (const key of keys) {
      expect(
        publisher.byKey(key).map((m) => JSON.parse(Buffer.from(m.payload).toString())),
      ).toEqual([0, 1]);
    }
  });

  it('validates its options', () => {
    expect(() => createOutbox({ store, maxKeyLength: 0 })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
    // MySQL's outbox columns hold 255 characters; PostgreSQL's are text.
    for (const limit of ['maxKeyLength', 'maxDestinationLength', 'maxMessageIdLength']) {
      const wide = (): unknown => createOutbox({ store, [limit]: 256 });
      if (kind === 'mysql') {
        expect(wide).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
      } else expect(wide).not.toThrow();
    }
    expect(() => createOutbox({} as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
  });
});

describe('outbox insert statements', () => {
  const event = (payloadBytes: number): EncodedEvent => ({
    destination: 'd',
    key: null,
    messageId: 'm',
    headersJson: '{}',
    // Only the size counts here.
    payload: { byteLength: payloadBytes } as Buffer,
  });

  it('splits a call by rows and by bytes, so no statement nears the 1 GiB message limit', () => {
    const sizes = (events: EncodedEvent[]): number[] => statements(events).map((c) => c.length);
    expect(sizes(Array.from({ length: 2500 }, () => event(10)))).toEqual([1000, 1000, 500]);
    const mib = 1024 * 1024;
    expect(sizes([event(20 * mib), event(10 * mib), event(20 * mib), event(mib)])).toEqual([2, 2]);
    // One event larger than the budget still gets a statement of its own.
    expect(sizes([event(40 * mib), event(1)])).toEqual([1, 1]);
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
