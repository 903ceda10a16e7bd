/** The shipping service as a process: a RabbitMQ consumer of `payment.captured` through its inbox. */
import { createInbox, createStore } from '@justonce/core';
import { createRabbitConsumer } from '@justonce/rabbitmq';
import { configFromEnv } from '../config';
import { serviceMain } from '../service-process';
import { shippingHandler } from './handler';

serviceMain('shipping', async () => {
  const config = configFromEnv();
  const store = await createStore({
    connectionString: config.databaseUrl,
    schema: config.names.schemas.shipping,
  });
  const consumer = createRabbitConsumer({
    url: config.amqpUrl,
    queue: config.names.paymentQueue,
    inbox: createInbox({ store, consumer: 'shipping' }),
    handler: shippingHandler(store),
    prefetch: 40,
    concurrency: 8,
    retry: { delaysMs: [200, 1_000] },
  });
  await consumer.start();

  return async () => {
    await consumer.stop();
    await store.close();
  };
});
