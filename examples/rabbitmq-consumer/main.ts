// One shipment per order, however often RabbitMQ delivers it; failures retried with delays,
// poison messages dead-lettered to `orders.dlx` → `orders.dead` with the reason in headers.
import { consoleLogger, createInbox, createStore, messageHandler, on } from '@justonce/core';
import { createRabbitConsumer } from '@justonce/rabbitmq';
import { OrderPlaced } from './messages';

async function main(): Promise<void> {
  const store = await createStore({ connectionString: process.env.DATABASE_URL });
  await store.migrate();
  await store.knex.raw('create table if not exists shipments (order_id text primary key)');
  const consumer = createRabbitConsumer({
    url: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
    queue: 'orders',
    inbox: createInbox({ store, consumer: 'shipping', maxAttempts: 4 }),
    prefetch: 20,
    concurrency: 4,
    retry: { delaysMs: [1_000, 5_000, 30_000] },
    logger: consoleLogger('info'),
    // Routed by the `type` header; a body that is not JSON or fails the schema is
    // dead-lettered at once as INVALID_PAYLOAD, a message of no known type as UNKNOWN_MESSAGE_TYPE.
    handler: messageHandler({
      routes: [
        on(OrderPlaced, async ({ orderId }, { trx }) => {
          await trx('shipments').insert({ order_id: orderId });
        }),
      ],
    }),
  });
  await consumer.start();
  const stop = () => void consumer.stop().then(() => store.close());
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
