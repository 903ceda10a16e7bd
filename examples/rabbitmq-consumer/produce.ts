// Sends five orders to the `orders` queue, and one of them a second time with the same
// message id, the way a producer's retry would.
import { connect } from 'amqplib';

async function main(): Promise<void> {
  const connection = await connect(process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672');
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue('orders', { durable: true });
  const orders = ['o-1', 'o-2', 'o-3', 'o-4', 'o-5', 'o-3'];
  for (const orderId of orders) {
    channel.sendToQueue('orders', Buffer.from(JSON.stringify({ orderId })), {
      messageId: `order-${orderId}`,
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
