/**
 * The shipping service, wired: its store and a RabbitMQ consumer of `payment.captured`
 * through its inbox. `main.ts` runs it as a process; the orders benchmark starts it in its
 * own.
 */
import { createInbox, createStore } from '@justonce/core';
import { createRabbitConsumer, type RabbitConsumerOptions } from '@justonce/rabbitmq';
import { shippingHandler } from './handler';

/** Options of {@link startShippingService}. */
export interface ShippingServiceOptions {
  readonly databaseUrl: string;
  /** The shipping schema, migrated and with its tables (`createShippingTables`). */
  readonly schema: string;
  readonly amqpUrl: string;
  /** The RabbitMQ queue of `payment.captured`. */
  readonly queue: string;
  /** Told of each delivery settled (the benchmark times the shipments by it). */
  readonly onSettled?: RabbitConsumerOptions['onSettled'];
}

/** Starts the shipping consumer; resolves to its stop. */
export async function startShippingService(
  options: ShippingServiceOptions,
): Promise<() => Promise<void>> {
  const store = await createStore({
    connectionString: options.databaseUrl,
    schema: options.schema,
  });
  const consumer = createRabbitConsumer({
    url: options.amqpUrl,
    queue: options.queue,
    inbox: createInbox({ store, consumer: 'shipping' }),
    handler: shippingHandler(store),
    prefetch: 40,
    concurrency: 8,
    // The deliveries waiting together share one inbox transaction (up to `batchSize`).
    mode: 'batch',
    retry: { delaysMs: [200, 1_000] },
    onSettled: options.onSettled,
  });
  await consumer.start();

  return async () => {
    await consumer.stop();
    await store.close();
  };
}
