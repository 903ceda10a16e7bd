/**
 * The orders service, wired: its store, the orders API on a port of 127.0.0.1, and a relay
 * that publishes the `order.created` events its transactions committed to Kafka. `main.ts`
 * runs it as a process; the orders benchmark starts it in its own.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createOutbox, createRelay, createStore } from '@justonce/core';
import { createKafkaPublisher } from '@justonce/kafka';
import { createOrderKeys, createOrdersApp } from './app';

/** Options of {@link startOrdersService}. */
export interface OrdersServiceOptions {
  readonly databaseUrl: string;
  /** The orders schema, migrated and with its tables (`createOrdersTables`). */
  readonly schema: string;
  readonly kafkaBrokers: readonly string[];
  /** The Kafka topic `order.created` goes to. */
  readonly topic: string;
  /** Where the API listens on 127.0.0.1; `0` for a free port. */
  readonly port: number;
  /** What the relay does with a published event. */
  readonly onPublished: 'keep' | 'delete';
}

/** The running orders service. */
export interface OrdersService {
  /** Where the API listens. */
  readonly url: string;
  /** Stops taking requests, then stops the relay and closes the clients. */
  stop(): Promise<void>;
}

/** Starts the orders API and its relay. */
export async function startOrdersService(options: OrdersServiceOptions): Promise<OrdersService> {
  const store = await createStore({
    connectionString: options.databaseUrl,
    schema: options.schema,
    pool: { max: 20 },
  });
  const app = createOrdersApp({
    store,
    operations: createOrderKeys(store),
    outbox: createOutbox({ store }),
    topic: options.topic,
    onError: (error) => console.error('POST /orders failed:', error),
  });
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(options.port, '127.0.0.1', () => resolve(listening));
  });
  const { port } = server.address() as AddressInfo;

  const publisher = createKafkaPublisher({ brokers: [...options.kafkaBrokers] });
  const relay = createRelay({ store, publisher, onPublished: options.onPublished });
  await relay.start();

  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      await new Promise((resolve) => server.close(resolve));
      await relay.stop();
      await publisher.close();
      await store.close();
    },
  };
}
