/**
 * The hand-written side of `pnpm bench orders`: the same flow with no guarantee at all, as a
 * careful service would write it without a framework.
 *
 * - orders: an Express `POST /orders` (the same Express, body parser and request validation
 *   as the orders app: its `acceptOrder`) inserting the order row (its `orderRow`), then
 *   sending `order.created` with a plain kafkajs producer (acks from all in-sync replicas)
 *   before answering 201. No idempotency record, no outbox: a crash between the insert and
 *   the send loses the event.
 * - payments: a kafkajs consumer (the payments consumer's group settings, 4 partitions at a
 *   time, offsets committed by kafkajs) that charges the same provider through the same
 *   client with the order id as key, inserts the payment row, and publishes
 *   `payment.captured` persistent on an amqplib confirm channel, awaiting the confirm. No
 *   inbox, no charge record.
 * - shipping: an amqplib consumer (prefetch 40, 8 handlers at once, as the shipping consumer)
 *   inserting the shipment row, then acknowledging. No inbox.
 *
 * The tables are the example's (its own `create…Tables`), in plain schemas with no justonce
 * tables; each service has its own knex pool of the example's size.
 */
import { randomUUID } from 'node:crypto';
import type { RequestListener } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { connect, type ConfirmChannel, type ConsumeMessage } from 'amqplib';
import { Kafka, logLevel } from 'kafkajs';
import createKnex, { type Knex } from 'knex';
import { createStore, type Store } from '@justonce/core';
import { PROVIDER_TIMEOUT_MS } from '../examples/order-service/config';
import { acceptOrder, createOrdersTables, orderRow } from '../examples/order-service/orders/app';
import { createPaymentsTables } from '../examples/order-service/payments/handler';
import { createProviderClient } from '../examples/order-service/payments/provider-client';
import { createShippingTables } from '../examples/order-service/shipping/handler';
import { close, serve, startFlow, type BenchEnv, type Flow, type FlowNames } from './_orders-flow';

/** The few members of Express this file uses. */
interface ExpressRequest {
  readonly body: unknown;
  get(header: string): string | undefined;
}
interface ExpressResponse {
  status(code: number): { json(body: unknown): unknown };
}
type ExpressHandler = (
  req: ExpressRequest,
  res: ExpressResponse,
  next: (error?: unknown) => void,
) => unknown;
interface Express {
  (): RequestListener & { post(path: string, ...handlers: ExpressHandler[]): unknown };
  json(): ExpressHandler;
}

/**
 * Express, from the examples' dependencies (the repository root has none): the same copy
 * the orders app runs on.
 */
const express = createRequire(join(__dirname, '..', 'examples', 'package.json'))(
  'express',
) as Express;

/** A knex pool on the database, as a hand-written service has. */
function pool(env: BenchEnv, max: number): Knex {
  return createKnex({ client: 'pg', connection: env.databaseUrl, pool: { min: 0, max } });
}

/** Creates `schema` with the business table the example's `createTables` makes. */
async function createTables(
  env: BenchEnv,
  schema: string,
  create: (store: Store) => Promise<void>,
): Promise<void> {
  await env.db.raw(`create schema "${schema}"`);
  const store = await createStore({ connectionString: env.databaseUrl, schema, pool: { max: 1 } });
  await create(store);
  await store.close();
}

/** The orders API by hand: insert, send, answer. */
async function startOrders(env: BenchEnv, names: FlowNames, kafka: Kafka) {
  await createTables(env, names.schemas.orders, createOrdersTables);
  const db = pool(env, 20);
  const producer = kafka.producer();
  await producer.connect();
  const app = express();
  app.post('/orders', express.json(), async (req, res) => {
    const order = acceptOrder(req.body, res);
    if (order === undefined) return;
    await db
      .withSchema(names.schemas.orders)
      .table('orders')
      .insert(orderRow(order, req.get('idempotency-key') ?? ''));
    const { orderId, customerId, amountCents, currency } = order;
    await producer.send({
      topic: names.topic,
      acks: -1,
      messages: [
        { key: orderId, value: JSON.stringify({ orderId, customerId, amountCents, currency }) },
      ],
    });
    res.status(201).json(order);
  });
  const { url, server } = await serve(app);
  const stop = async (): Promise<void> => {
    await close(server);
    await producer.disconnect();
    await db.destroy();
  };
  return { url, stop };
}

/** Publishes `body` persistent to `queue` and resolves once the broker confirmed it. */
function publishConfirmed(channel: ConfirmChannel, queue: string, body: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    channel.sendToQueue(
      queue,
      Buffer.from(JSON.stringify(body)),
      { persistent: true, messageId: randomUUID(), contentType: 'application/json' },
      (error) => (error ? reject(error as Error) : resolve()),
    );
  });
}

/** The payments consumer by hand: charge, insert, publish with a confirm. */
async function startPayments(env: BenchEnv, names: FlowNames, kafka: Kafka) {
  await createTables(env, names.schemas.payments, createPaymentsTables);
  const db = pool(env, 20);
  const provider = createProviderClient({ url: env.providerUrl, timeoutMs: PROVIDER_TIMEOUT_MS });
  const amqp = await connect(env.amqpUrl);
  const channel = await amqp.createConfirmChannel();
  const consumer = kafka.consumer({
    groupId: names.group,
    sessionTimeout: 6_000,
    heartbeatInterval: 1_000,
    maxWaitTimeInMs: 200,
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [names.topic], fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently: 4,
    eachMessage: async ({ message }) => {
      const order = JSON.parse(message.value!.toString()) as {
        orderId: string;
        amountCents: number;
        currency: string;
      };
      const charge = await provider.charge(order, { idempotencyKey: order.orderId });
      await db.withSchema(names.schemas.payments).table('payments').insert({
        order_id: order.orderId,
        payment_id: charge.paymentId,
        amount_cents: charge.amountCents,
      });
      await publishConfirmed(channel, names.queue, {
        orderId: order.orderId,
        paymentId: charge.paymentId,
        amountCents: charge.amountCents,
      });
    },
  });
  return async (): Promise<void> => {
    await consumer.disconnect();
    await amqp.close();
    await db.destroy();
  };
}

/** The shipping consumer by hand: insert, acknowledge, note the time. */
async function startShipping(env: BenchEnv, names: FlowNames, shipped: Map<string, number>) {
  await createTables(env, names.schemas.shipping, createShippingTables);
  const db = pool(env, 10);
  const amqp = await connect(env.amqpUrl);
  const channel = await amqp.createChannel();
  await channel.prefetch(40);
  const waiting: ConsumeMessage[] = [];
  let running = 0;
  const handle = async (message: ConsumeMessage): Promise<void> => {
    const payment = JSON.parse(message.content.toString()) as {
      orderId: string;
      paymentId: string;
    };
    await db.withSchema(names.schemas.shipping).table('shipments').insert({
      order_id: payment.orderId,
      payment_id: payment.paymentId,
    });
    channel.ack(message);
    if (!shipped.has(payment.orderId)) shipped.set(payment.orderId, performance.now());
  };
  const pump = (): void => {
    while (running < 8 && waiting.length > 0) {
      running++;
      handle(waiting.shift()!)
        .catch((error: unknown) => console.error('shipping failed:', error))
        .finally(() => {
          running--;
          pump();
        });
    }
  };
  await channel.consume(names.queue, (message) => {
    if (message === null) return;
    waiting.push(message);
    pump();
  });
  return async (): Promise<void> => {
    await amqp.close();
    await db.destroy();
  };
}

/** Starts the hand-written side's three services on `names`. */
export async function startHandFlow(env: BenchEnv, names: FlowNames): Promise<Flow> {
  const kafka = new Kafka({
    clientId: 'bench-hand',
    brokers: env.kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  return startFlow({
    shipping: (shipped) => startShipping(env, names, shipped),
    payments: () => startPayments(env, names, kafka),
    orders: () => startOrders(env, names, kafka),
  });
}
