/**
 * Sends a few orders to the `orders` topic, each with a `message-id` header and the `type`
 * header the consumer routes by, and one of them twice (same id, a later offset) to show the
 * inbox dropping the copy.
 */
import { MESSAGE_TYPE_HEADER, type MessagePayload } from '@justonce/core';
import { Kafka } from 'kafkajs';
import { OrderPlaced } from './messages';

type Order = MessagePayload<typeof OrderPlaced>;

async function main(): Promise<void> {
  const kafka = new Kafka({ brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',') });
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  const orders: Order[] = Array.from({ length: 5 }, (_, i) => ({
    id: `order-${Date.now()}-${i}`,
    cents: 1000 + i,
  }));
  const record = (order: Order) => ({
    key: order.id,
    value: JSON.stringify(order),
    headers: { 'message-id': `order-placed:${order.id}`, [MESSAGE_TYPE_HEADER]: OrderPlaced.type },
  });
  await producer.send({ topic: 'orders', acks: -1, messages: orders.map(record) });
  await producer.send({ topic: 'orders', acks: -1, messages: [record(orders[0]!)] });
  await producer.disconnect();
  console.log(`sent ${orders.length} orders and one duplicate of ${orders[0]!.id}`);
}

void main();
