/**
 * The relay's side of the input boundary: a broker error that quotes the event (and so may
 * hold U+0000 or a lone surrogate) is recorded as the event's last error, never a raw
 * database error that fails the claiming transaction and stalls the relay.
 */
import { randomUUID } from 'node:crypto';
import {
  createOutbox,
  createRelay,
  rowsOf,
  type OutgoingMessage,
  type PublishResult,
  type Publisher,
} from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';

describe.each(ALL_STORE_KINDS)('relay input boundary on %s', (kind) => {
  let store: Awaited<ReturnType<typeof openTestStore>>;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });

  it.each([
    ['a per-message failure', false],
    ['a failed publish call', true],
  ])('%s whose error quotes U+0000 is recorded and retried', async (_label, throws) => {
    let calls = 0;
    const publisher: Publisher = {
      async publish(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
        calls += 1;
        if (calls > 1) return messages.map((m) => ({ messageId: m.messageId, ok: true }));
        const error = new Error('broker refused "\u0000\ud800" in the payload');
        if (throws) throw error;
        return messages.map((m) => ({ messageId: m.messageId, ok: false, error, retriable: true }));
      },
      close: async () => undefined,
    };
    const relay = createRelay({ store, publisher, onPublished: 'keep', backoff: { baseMs: 1 } });
    const id = randomUUID();
    await store.knex.transaction((trx) =>
      createOutbox({ store }).add(trx, { destination: 'd', messageId: id, payload: { n: 1 } }),
    );
    await relay.runOnce();
    const failed = await store.knex.raw(
      `select status, attempts, last_error from ${store.names.table('outbox')} where message_id = ?`,
      [id],
    );
    const row = rowsOf<{ status: string; attempts: number; last_error: string }>(failed)[0];
    expect(row?.status).toBe('pending');
    expect(row?.last_error).toContain('broker refused "\\u0000\ufffd"');
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (let i = 0; i < 20 && calls < 2; i += 1) {
      await relay.runOnce();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const done = await store.knex.raw(
      `select status from ${store.names.table('outbox')} where message_id = ?`,
      [id],
    );
    expect(rowsOf<{ status: string }>(done)[0]?.status).toBe('published');
    await relay.stop();
  });
  it.each([
    ['a publish call that throws', 'throw'],
    ['per-message failures the publisher calls an outage', 'outage'],
  ])('%s (the broker is down) is never charged: no event goes dead', async (_label, how) => {
    let down = true;
    let calls = 0;
    const publisher: Publisher = {
      async publish(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
        calls += 1;
        const error = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        if (down && how === 'throw') throw error;
        if (down) {
          return messages.map((m) => ({
            messageId: m.messageId,
            ok: false,
            error,
            retriable: true,
            outage: true,
          }));
        }
        return messages.map((m) => ({ messageId: m.messageId, ok: true }));
      },
      close: async () => undefined,
    };
    const relay = createRelay({
      store,
      publisher,
      onPublished: 'keep',
      maxAttempts: 2,
      backoff: { baseMs: 0, capMs: 1 },
    });
    const id = randomUUID();
    await store.knex.transaction((trx) =>
      createOutbox({ store }).add(trx, { destination: 'd', key: 'k', messageId: id, payload: 1 }),
    );
    const read = async () =>
      rowsOf<{ status: string; attempts: number }>(
        await store.knex.raw(
          `select status, attempts from ${store.names.table('outbox')} where message_id = ?`,
          [id],
        ),
      )[0];
    for (let cycle = 0; calls < 6 && cycle < 200; cycle += 1) {
      await relay.runOnce();
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(calls).toBeGreaterThanOrEqual(6);
    expect(await read()).toMatchObject({ status: 'pending', attempts: 0 });
    down = false;
    for (let cycle = 0; (await read())?.status === 'pending' && cycle < 200; cycle += 1) {
      await relay.runOnce();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(await read()).toMatchObject({ status: 'published', attempts: 0 });
    await relay.stop();
  });
});
