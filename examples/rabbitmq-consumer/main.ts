// One shipment per order, however often RabbitMQ delivers it; failures retried with delays,
// poison messages dead-lettered to `orders.dlx` → `orders.dead` with the reason in headers.
import { consoleLogger, createInbox, createStore } from '@justonce/core';
import { createRabbitConsumer } from '@justonce/rabbitmq';

async function main(): Promise<void> {
  const store = await createStore({ connectionString: process.env.DATABASE_URL });
  await store.migrate();
  await store.knex.raw('create table if not exists shipments (order_id text primary key)');
  const consumer = createRabbitConsumer({
    url: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
    queue: 'orders',
    inbox: createInbox({
      store,
      consumer: 'shipping',
      maxAttempts: 4,
      decode: (body) => JSON.parse(Buffer.from(body as Uint8Array).toString()) as unknown,
    }),
    prefetch: 20,
    concurrency: 4,
    retry: { delaysMs: [1_000, 5_000, 30_000] },
    logger: consoleLogger('info'),
    handler: async ({ trx, payload }) => {
      const { orderId } = payload as { orderId: string };
      await trx('shipments').insert({ order_id: orderId });
    },
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
