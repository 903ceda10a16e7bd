/**
 * The justonce side of `pnpm bench orders`: the order-service example's own orders app,
 * payments handler and shipping handler, wired in one process as its service processes wire
 * them (orders/main.ts, payments/main.ts, shipping/main.ts: the same pool sizes, consumer
 * settings and time limits) against the real PostgreSQL, Kafka and RabbitMQ. The one
 * difference: the relays keep the library's default `onPublished: 'delete'`, where the
 * example keeps published events for its end-of-run checks to count.
 */
import {
  createInbox,
  createOperations,
  createOutbox,
  createRelay,
  createStore,
  type Store,
} from '@justonce/core';
import { createKafkaConsumer, createKafkaPublisher } from '@justonce/kafka';
import { createRabbitConsumer, createRabbitPublisher } from '@justonce/rabbitmq';
import { PROVIDER_TIMEOUT_MS } from '../examples/order-service/config';
import { createOrdersApp, createOrdersTables } from '../examples/order-service/orders/app';
import {
  classifyPaymentError,
  createPaymentsTables,
  paymentsHandler,
} from '../examples/order-service/payments/handler';
import { createProviderClient } from '../examples/order-service/payments/provider-client';
import { createShippingTables, shippingHandler } from '../examples/order-service/shipping/handler';
import { close, serve, type BenchEnv, type Flow, type FlowNames } from './_orders-flow';

/** Opens, migrates and fills a service's store with its business table. */
async function openStore(
  env: BenchEnv,
  schema: string,
  createTables: (store: Store) => Promise<void>,
  max?: number,
): Promise<Store> {
  const store = await createStore({
    connectionString: env.databaseUrl,
    schema,
    ...(max === undefined ? {} : { pool: { max } }),
  });
  await store.migrate();
  await createTables(store);
  return store;
}

/** The orders service: the API, and its relay to Kafka. Resolves to its URL and its stop. */
async function startOrders(env: BenchEnv, names: FlowNames) {
  const store = await openStore(env, names.schemas.orders, createOrdersTables, 20);
  const app = createOrdersApp({
    store,
    operations: createOperations({ store, leaseMs: 3_000 }),
    outbox: createOutbox({ store }),
    topic: names.topic,
    onError: (error) => console.error('POST /orders failed:', error),
  });
  const { url, server } = await serve(app);
  const publisher = createKafkaPublisher({ brokers: env.kafkaBrokers });
  const relay = createRelay({ store, publisher });
  await relay.start();
  const stop = async (): Promise<void> => {
    await close(server);
    await relay.stop();
    await publisher.close();
    await store.close();
  };
  return { url, stop };
}

/** The payments service: the Kafka consumer through its inbox, and its relay to RabbitMQ. */
async function startPayments(env: BenchEnv, names: FlowNames) {
  const store = await openStore(env, names.schemas.payments, createPaymentsTables, 20);
  const consumer = createKafkaConsumer({
    brokers: env.kafkaBrokers,
    groupId: names.group,
    topics: [names.topic],
    fromBeginning: true,
    concurrency: 4,
    batchSize: 20,
    consumerConfig: { sessionTimeout: 6_000, heartbeatInterval: 1_000, maxWaitTimeInMs: 200 },
    inbox: createInbox({
      store,
      consumer: 'payments',
      maxAttempts: 20,
      classify: classifyPaymentError,
    }),
    handler: paymentsHandler({
      store,
      charges: createOperations({
        store,
        operation: 'charge-order',
        leaseMs: 4_000,
        waitForInProgressMs: 6_000,
      }),
      provider: createProviderClient({ url: env.providerUrl, timeoutMs: PROVIDER_TIMEOUT_MS }),
      destination: names.queue,
    }),
  });
  const publisher = createRabbitPublisher({ url: env.amqpUrl });
  const relay = createRelay({ store, publisher });
  await consumer.start();
  await relay.start();
  return async (): Promise<void> => {
    await consumer.stop();
    await relay.stop();
    await publisher.close();
    await store.close();
  };
}

/**
 * The shipping service: the RabbitMQ consumer through its inbox. `shipped` gets the time of
 * each order's first settled delivery (its shipment row committed).
 */
async function startShipping(env: BenchEnv, names: FlowNames, shipped: Map<string, number>) {
  const store = await openStore(env, names.schemas.shipping, createShippingTables);
  const consumer = createRabbitConsumer({
    url: env.amqpUrl,
    queue: names.queue,
    inbox: createInbox({ store, consumer: 'shipping' }),
    handler: shippingHandler(store),
    prefetch: 40,
    concurrency: 8,
    retry: { delaysMs: [200, 1_000] },
    onSettled: (event) => {
      if (event.action !== 'acked') return;
      const { orderId } = JSON.parse(event.message.content.toString()) as { orderId: string };
      if (!shipped.has(orderId)) shipped.set(orderId, performance.now());
    },
  });
  await consumer.start();
  return async (): Promise<void> => {
    await consumer.stop();
    await store.close();
  };
}

/** Starts the justonce side's three services on `names`. */
export async function startJustonceFlow(env: BenchEnv, names: FlowNames): Promise<Flow> {
  const shipped = new Map<string, number>();
  const stopShipping = await startShipping(env, names, shipped);
  const stopPayments = await startPayments(env, names);
  const orders = await startOrders(env, names);
  return {
    baseUrl: orders.url,
    shipped,
    stop: async () => {
      await orders.stop();
      await stopPayments();
      await stopShipping();
    },
  };
}
