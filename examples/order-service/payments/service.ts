/**
 * The payments service, wired: its store, a Kafka consumer of `order.created` through its
 * inbox, charging through the provider, and a relay that publishes the `payment.captured`
 * events its transactions committed to RabbitMQ. `main.ts` runs it as a process; the orders
 * benchmark starts it in its own.
 */
import { createRelay, createStore } from '@justonce/core';
import { createKafkaConsumer } from '@justonce/kafka';
import { createRabbitPublisher } from '@justonce/rabbitmq';
import { PROVIDER_TIMEOUT_MS } from '../config';
import { createCharges, createPaymentsInbox, paymentsHandler } from './handler';
import { createProviderClient } from './provider-client';

/** Options of {@link startPaymentsService}. */
export interface PaymentsServiceOptions {
  readonly databaseUrl: string;
  /** The payments schema, migrated and with its tables (`createPaymentsTables`). */
  readonly schema: string;
  readonly kafkaBrokers: readonly string[];
  /** The Kafka consumer group. */
  readonly groupId: string;
  /** The Kafka topic of `order.created`. */
  readonly topic: string;
  /** The RabbitMQ queue `payment.captured` goes to. */
  readonly queue: string;
  readonly amqpUrl: string;
  /** The payment provider's base URL. */
  readonly providerUrl: string;
  /** What the relay does with a published event. */
  readonly onPublished: 'keep' | 'delete';
}

/** Starts the payments consumer and its relay; resolves to their stop. */
export async function startPaymentsService(
  options: PaymentsServiceOptions,
): Promise<() => Promise<void>> {
  // Each handler holds its inbox transaction while the charge runs on other connections.
  const store = await createStore({
    connectionString: options.databaseUrl,
    schema: options.schema,
    pool: { max: 20 },
  });
  const consumer = createKafkaConsumer({
    brokers: [...options.kafkaBrokers],
    groupId: options.groupId,
    topics: [options.topic],
    fromBeginning: true,
    concurrency: 4,
    batchSize: 20,
    // A killed member is noticed after the session timeout: keep it short.
    consumerConfig: { sessionTimeout: 6_000, heartbeatInterval: 1_000, maxWaitTimeInMs: 200 },
    inbox: createPaymentsInbox(store, createCharges(store)),
    handler: paymentsHandler({
      store,
      provider: createProviderClient({ url: options.providerUrl, timeoutMs: PROVIDER_TIMEOUT_MS }),
      destination: options.queue,
    }),
  });
  const publisher = createRabbitPublisher({ url: options.amqpUrl });
  const relay = createRelay({ store, publisher, onPublished: options.onPublished });
  await consumer.start();
  await relay.start();

  return async () => {
    await consumer.stop();
    await relay.stop();
    await publisher.close();
    await store.close();
  };
}
