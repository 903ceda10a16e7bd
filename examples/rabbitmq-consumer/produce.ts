// Sends five orders to the `orders` queue, and one of them a second time with the same
// message id, the way a producer's retry would. Each carries the `type` header the consumer
// routes by.
import { MESSAGE_TYPE_HEADER, type MessagePayload } from '@justonce/core';
import { connect } from 'amqplib';
import { OrderPlaced } from './messages';

async function main(): Promise<void> {
  const connection = await connect(process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672');
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue('orders', { durable: true });
  const orders = ['o-1', 'o-2', 'o-3', 'o-4', 'o-5', 'o-3'];
  for (const orderId of orders) {
    const order: MessagePayload<typeof OrderPlaced> = { orderId };
    channel.sendToQueue('orders', Buffer.from(JSON.stringify(order)), {
      messageId: `order-${orderId}`,
      headers: { [MESSAGE_TYPE_HEADER]: OrderPlaced.type },
      persistent: true,
      contentType: 'application/json',
    });
  }
  await channel.waitForConfirms();
  console.log(`sent ${orders.length} messages (o-3 twice)`);
  await connection.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
