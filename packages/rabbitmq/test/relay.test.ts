import { createOutbox, createRelay, type Publisher } from '@justonce/core';
import { openTestStore } from '../../core/test/db';
import { openLogStore } from '../../core/test/fixtures/log-relay-support';
import { createRabbitPublisher } from '../src';
import { amqpUrl, openAdmin, uniqueName, type Admin } from './broker';

describe('the outbox relay publishing through createRabbitPublisher', () => {
  let store: Awaited<ReturnType<typeof openTestStore>>;
  let admin: Admin;
  let publisher: Publisher;
  const queue = uniqueName('relay');
  const exchange = uniqueName('relay-ex');

  beforeAll(async () => {
    store = await openTestStore('postgres');
    admin = await openAdmin();
    await admin.channel.assertQueue(queue, { durable: false });
    await admin.channel.assertExchange(exchange, 'direct', { durable: false });
    publisher = createRabbitPublisher({ url: amqpUrl() });
  });
  afterAll(async () => {
    await publisher.close();
    await admin.remove({ queues: [queue], exchanges: [exchange] });
    await admin.close();
    await store.dispose();
  });

  it('publishes committed events with their ids and keeps an unroutable one in the outbox', async () => {
    const outbox = createOutbox({ store, notify: false });
    const relay = createRelay({
      store,
      publisher,
      notify: false,
      onPublished: 'keep',
      backoff: { baseMs: 10_000 },
    });
    const ids = await store.knex.transaction((trx) =>
      outbox.add(trx, [
        { destination: queue, key: 'order-1', payload: { n: 1 }, headers: { tenant: 'acme' } },
        { destination: `${exchange}/nobody-bound`, key: 'order-2', payload: { n: 2 } },
        { destination: queue, key: 'order-1', payload: { n: 3 } },
      ]),
    );

    const cycle = await relay.runOnce();

    expect(cycle).toMatchObject({ claimed: 3, published: 2, failed: 1, dead: 0 });
    const delivered = await admin.drain(queue);
    expect(delivered.map((m) => m.properties.messageId)).toEqual([ids[0], ids[2]]);
    expect(delivered.map((m) => JSON.parse(m.content.toString()) as unknown)).toEqual([
      { n: 1 },
      { n: 3 },
    ]);
    expect(delivered[0]!.properties.headers).toMatchObject({
      'message-id': ids[0],
      'partition-key': 'order-1',
      tenant: 'acme',
    });

    const rows = await store.knex.raw<{
      rows: Array<{ message_id: string; status: string; attempts: number; last_error: string }>;
    }>(
      `select message_id, status, attempts, last_error from ${store.names.table('outbox')} order by id`,
    );
    expect(rows.rows.map((r) => [r.message_id, r.status])).toEqual([
      [ids[0], 'published'],
      [ids[1], 'pending'],
      [ids[2], 'published'],
    ]);
    expect(rows.rows[1]!.attempts).toBe(1);
    expect(rows.rows[1]!.last_error).toMatch(/unroutable/i);
  });

  it("publishes from the WAL in mode 'log', with the same ids, headers and order", async () => {
    const logStore = await openLogStore();
    try {
      const relay = createRelay({ store: logStore, publisher, mode: 'log' });
      await relay.runOnce(); // creates the publication and the slot
      const outbox = createOutbox({ store: logStore });
      const ids = await logStore.knex.transaction((trx) =>
        outbox.add(trx, [
          { destination: queue, key: 'order-1', payload: { n: 1 }, headers: { tenant: 'acme' } },
          { destination: queue, key: 'order-1', payload: { n: 2 } },
        ]),
      );
      expect(await relay.runOnce()).toMatchObject({ published: 2, failed: 0 });
      const delivered = await admin.drain(queue);
      expect(delivered.map((m) => m.properties.messageId)).toEqual(ids);
      expect(delivered.map((m) => JSON.parse(m.content.toString()) as unknown)).toEqual([
        { n: 1 },
        { n: 2 },
      ]);
      expect(delivered[0]!.properties.headers).toMatchObject({
        'message-id': ids[0],
        'partition-key': 'order-1',
        tenant: 'acme',
      });
    } finally {
      await logStore.dispose();
    }
  });
});
