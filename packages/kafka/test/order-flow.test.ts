import type { Admin, Kafka, Producer } from 'kafkajs';
import { createInbox, createOutbox, createRelay, type Publisher, type Relay } from '@justonce/core';
import { createKafkaConsumer, createKafkaPublisher, type KafkaConsumer } from '../src';
import { openTestStore } from '../../core/test/db';
import {
  FAST_GROUP,
  createTopics,
  unique,
  connectKafkaClients,
  type KafkaClients,
} from './support';
import { waitFor } from '../../../test-support/wait-for';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

let kafka: Kafka;
let admin: Admin;
let producer: Producer;
let clients: KafkaClients;
const cleanup: Array<() => Promise<void>> = [];

beforeAll(async () => {
  clients = await connectKafkaClients();
  ({ kafka, admin, producer } = clients);
});

afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
  await clients.close();
});

/**
 * A publisher that publishes for real and then, once, fails as a relay does when it dies
 * after the broker took the batch and before it marked the events published: the relay
 * publishes the same events again, with the same message ids.
 */
function crashAfterPublishOnce(inner: Publisher): Publisher & { crashed: number } {
  const wrapper = {
    crashed: 0,
    async publish(messages: Parameters<Publisher['publish']>[0]) {
      const results = await inner.publish(messages);
      if (wrapper.crashed === 0 && results.some((r) => r.ok)) {
        wrapper.crashed++;
        throw new Error('relay crashed between publish and mark');
      }
      return results;
    },
    close: () => inner.close(),
  };
  return wrapper;
}

async function open(): Promise<TestStore> {
  const store = await openTestStore('postgres');
  cleanup.push(() => store.dispose());
  return store;
}

async function fullyCommitted(groupId: string, topic: string): Promise<boolean> {
  const [[committed], ends] = await Promise.all([
    admin.fetchOffsets({ groupId, topics: [topic] }),
    admin.fetchTopicOffsets(topic),
  ]);
  return ends.every(
    (e) => committed!.partitions.find((p) => p.partition === e.partition)?.offset === e.high,
  );
}

function relayOf(store: TestStore, publisher: Publisher): Relay {
  const relay = createRelay({
    store,
    publisher,
    batchSize: 20,
    pollIntervalMs: 100,
    backoff: { baseMs: 20, capMs: 100 },
    // Published events stay in the table: the test reads the ids billing emitted from it.
    onPublished: 'keep',
  });
  cleanup.push(() => relay.stop());
  return relay;
}

function consumerOf(consumer: KafkaConsumer): KafkaConsumer {
  cleanup.push(() => consumer.stop());
  return consumer;
}

describe('order service → relay → Kafka → billing inbox + outbox → relay → Kafka → shipping', () => {
  it('carries ids and trace headers end to end, with one effect per order despite duplicates and a relay crash', async () => {
    const ordersTopic = unique('orders');
    const invoicesTopic = unique('invoices');
    const billingGroup = unique('billing');
    const shippingGroup = unique('shipping');
    await createTopics(admin, [ordersTopic, invoicesTopic], 3);
    const orderDb = await open();
    const billingDb = await open();
    const shippingDb = await open();
    await billingDb.knex.raw(
      `create table ${billingDb.names.schema}.invoices (order_id text primary key, amount int)`,
    );
    await shippingDb.knex.raw(
      `create table ${shippingDb.names.schema}.shipments (
         seq bigserial primary key, order_id text, message_id text, causation_id text,
         correlation_id text, traceparent text)`,
    );

    // The order service: each order and its event commit in one transaction.
    const orderOutbox = createOutbox({ store: orderDb });
    const orders = Array.from({ length: 30 }, (_, i) => ({
      id: `order-${i}`,
      amount: 10 + i,
      correlationId: `corr-${i}`,
      traceparent: `00-${i.toString(16).padStart(32, 'a')}-${'b'.repeat(16)}-01`,
    }));
    const orderMessageIds = new Map<string, string>();
    for (const order of orders) {
      await orderDb.knex.transaction(async (trx) => {
        const [id] = await orderOutbox.add(trx, {
          destination: ordersTopic,
          key: order.id,
          payload: { orderId: order.id, amount: order.amount },
          headers: { 'correlation-id': order.correlationId, traceparent: order.traceparent },
        });
        orderMessageIds.set(order.id, id!);
      });
    }

    const orderPublisher = crashAfterPublishOnce(createKafkaPublisher({ kafka }));
    cleanup.push(() => orderPublisher.close());
    await relayOf(orderDb, orderPublisher).start();

    // Billing: consumes orders, writes an invoice and emits an event through its outbox.
    const billing = consumerOf(
      createKafkaConsumer({
        kafka,
        groupId: billingGroup,
        topics: [ordersTopic],
        fromBeginning: true,
        consumerConfig: FAST_GROUP,
        inbox: createInbox({
          store: billingDb,
          consumer: 'billing',
          decode: (body) =>
            JSON.parse(Buffer.from(body).toString()) as { orderId: string; amount: number },
        }),
        handler: async (ctx) => {
          const order = ctx.payload as { orderId: string; amount: number };
          await ctx.trx.raw(`insert into ${billingDb.names.schema}.invoices values (?, ?)`, [
            order.orderId,
            order.amount,
          ]);
          await ctx.outbox.add({ destination: invoicesTopic, key: order.orderId, payload: order });
        },
      }),
    );
    await billing.start();
    const billingPublisher = createKafkaPublisher({ kafka });
    cleanup.push(() => billingPublisher.close());
    await relayOf(billingDb, billingPublisher).start();

    // Shipping: the final consumer records what arrived, headers included.
    const shipping = consumerOf(
      createKafkaConsumer({
        kafka,
        groupId: shippingGroup,
        topics: [invoicesTopic],
        fromBeginning: true,
        mode: 'message',
        consumerConfig: FAST_GROUP,
        inbox: createInbox({
          store: shippingDb,
          consumer: 'shipping',
          decode: (body) => JSON.parse(Buffer.from(body).toString()) as { orderId: string },
        }),
        handler: async (ctx) => {
          const h = ctx.message.headers;
          await ctx.trx.raw(
            `insert into ${shippingDb.names.schema}.shipments
               (order_id, message_id, causation_id, correlation_id, traceparent) values (?, ?, ?, ?, ?)`,
            [
              (ctx.payload as { orderId: string }).orderId,
              ctx.messageId,
              h['causation-id'] ?? null,
              h['correlation-id'] ?? null,
              h.traceparent ?? null,
            ],
          );
        },
      }),
    );
    await shipping.start();

    // Duplicates on the wire: a third of the orders again, same message ids, new offsets.
    await waitFor('the injected relay crash', async () => orderPublisher.crashed > 0, {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    await producer.send({
      topic: ordersTopic,
      acks: -1,
      messages: orders
        .filter((_, i) => i % 3 === 0)
        .map((o) => ({
          key: o.id,
          value: JSON.stringify({ orderId: o.id, amount: o.amount }),
          headers: {
            'message-id': orderMessageIds.get(o.id)!,
            'correlation-id': o.correlationId,
            traceparent: o.traceparent,
          },
        })),
    });

    const shipments = async () =>
      (
        (await shippingDb.knex.raw(
          `select * from ${shippingDb.names.schema}.shipments order by seq`,
        )) as {
          rows: Array<{
            order_id: string;
            message_id: string;
            causation_id: string;
            correlation_id: string;
            traceparent: string;
          }>;
        }
      ).rows;
    await waitFor(
      'every order to be shipped',
      async () => (await shipments()).length >= orders.length,
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    // Every record on both topics, re-published and re-sent copies included, was handled.
    await waitFor('billing to commit everything', () => fullyCommitted(billingGroup, ordersTopic), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    await waitFor(
      'shipping to commit everything',
      () => fullyCommitted(shippingGroup, invoicesTopic),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const onWire = async (topic: string): Promise<number> =>
      (await admin.fetchTopicOffsets(topic)).reduce((sum, e) => sum + Number(e.high), 0);
    // The relay crash re-published at least one order, and the re-sent copies are there too.
    expect(await onWire(ordersTopic)).toBeGreaterThan(orders.length + 10);

    const invoices = (await billingDb.knex.raw(
      `select order_id from ${billingDb.names.schema}.invoices`,
    )) as { rows: Array<{ order_id: string }> };
    expect(invoices.rows.map((r) => r.order_id).sort()).toEqual(orders.map((o) => o.id).sort());

    const rows = await shipments();
    expect(rows).toHaveLength(orders.length);
    expect(new Set(rows.map((r) => r.order_id)).size).toBe(orders.length);
    const emitted = (await billingDb.knex.raw(
      `select message_id, headers from ${billingDb.names.table('outbox')}`,
    )) as { rows: Array<{ message_id: string }> };
    const emittedIds = new Set(emitted.rows.map((r) => r.message_id));
    for (const order of orders) {
      const row = rows.find((r) => r.order_id === order.id)!;
      expect(emittedIds.has(row.message_id)).toBe(true);
      expect(row.causation_id).toBe(orderMessageIds.get(order.id));
      expect(row.correlation_id).toBe(order.correlationId);
      expect(row.traceparent?.split('-')[1]).toBe(order.traceparent.split('-')[1]);
    }
  });
});
