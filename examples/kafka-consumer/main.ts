// One payment per order, however often Kafka delivers it.
import { createInbox, createStore, messageHandler, on } from '@justonce/core';
import { createKafkaConsumer } from '@justonce/kafka';
import { OrderPlaced } from './messages';

async function main(): Promise<void> {
  const store = await createStore({ connectionString: process.env.DATABASE_URL });
  await store.migrate();
  await store.knex.raw('create table if not exists payments (id text primary key, cents int)');
  const consumer = createKafkaConsumer({
    brokers: [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'],
    groupId: 'payments',
    topics: ['orders'],
    fromBeginning: true,
    inbox: createInbox({ store, consumer: 'payments' }),
    handler: messageHandler({
      routes: [
        on(OrderPlaced, async (order, { trx }) => {
          await trx('payments').insert({ id: order.id, cents: order.cents });
        }),
      ],
    }),
  });
  await consumer.start();
  process.once('SIGINT', () => void consumer.stop().then(() => store.close()));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
