/**
 * The orders service as a process: the orders API, and a relay that publishes the
 * `order.created` events its transactions committed to Kafka.
 */
import type { Server } from 'node:http';
import { createOperations, createOutbox, createRelay, createStore } from '@justonce/core';
import { createKafkaPublisher } from '@justonce/kafka';
import { configFromEnv } from '../config';
import { serviceMain } from '../service-process';
import { createOrdersApp } from './app';

serviceMain('orders', async () => {
  const config = configFromEnv();
  const store = await createStore({
    connectionString: config.databaseUrl,
    schema: config.names.schemas.orders,
    pool: { max: 20 },
  });
  // A key whose request died with its process is free again after leaseMs.
  const operations = createOperations({ store, leaseMs: 3_000 });
  const app = createOrdersApp({
    store,
    operations,
    outbox: createOutbox({ store }),
    topic: config.names.orderTopic,
    onError: (error) => console.error('POST /orders failed:', error),
  });
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(config.ordersPort, '127.0.0.1', () => resolve(listening));
  });

  const publisher = createKafkaPublisher({ brokers: [...config.kafkaBrokers] });
  // 'keep' leaves published events in the table, for the run's checks to count.
  const relay = createRelay({ store, publisher, onPublished: 'keep' });
  await relay.start();

  return async () => {
    await new Promise((resolve) => server.close(resolve));
    await relay.stop();
    await publisher.close();
    await store.close();
  };
});
