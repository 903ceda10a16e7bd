/**
 * The payments service as a process: a Kafka consumer of `order.created` through its inbox,
 * charging through the provider, and a relay that publishes the `payment.captured` events
 * its transactions committed to RabbitMQ.
 */
import { createInbox, createOperations, createRelay, createStore } from '@justonce/core';
import { createKafkaConsumer } from '@justonce/kafka';
import { createRabbitPublisher } from '@justonce/rabbitmq';
import { configFromEnv, PROVIDER_TIMEOUT_MS } from '../config';
import { serviceMain } from '../service-process';
import { classifyPaymentError, paymentsHandler } from './handler';
import { createProviderClient } from './provider-client';

serviceMain('payments', async () => {
  const config = configFromEnv();
  const { names } = config;
  // Each handler holds its inbox transaction while the charge runs on other connections.
  const store = await createStore({
    connectionString: config.databaseUrl,
    schema: names.schemas.payments,
    pool: { max: 20 },
  });
  const charges = createOperations({
    store,
    operation: 'charge-order',
    // A charge whose process died is taken over after leaseMs; a redelivery waits for that.
    leaseMs: 4_000,
    waitForInProgressMs: 6_000,
  });
  const consumer = createKafkaConsumer({
    brokers: [...config.kafkaBrokers],
    groupId: names.paymentsGroup,
    topics: [names.orderTopic],
    fromBeginning: true,
    concurrency: 4,
    batchSize: 20,
    // A killed member is noticed after the session timeout: keep it short.
    consumerConfig: { sessionTimeout: 6_000, heartbeatInterval: 1_000, maxWaitTimeInMs: 200 },
    inbox: createInbox({
      store,
      consumer: 'payments',
      maxAttempts: 20,
      classify: classifyPaymentError,
    }),
    handler: paymentsHandler({
      store,
      charges,
      provider: createProviderClient({
        url: `http://127.0.0.1:${config.providerPort}`,
        timeoutMs: PROVIDER_TIMEOUT_MS,
      }),
      destination: names.paymentQueue,
    }),
  });
  const publisher = createRabbitPublisher({ url: config.amqpUrl });
  const relay = createRelay({ store, publisher, onPublished: 'keep' });
  await consumer.start();
  await relay.start();

  return async () => {
    await consumer.stop();
    await relay.stop();
    await publisher.close();
    await store.close();
  };
});
