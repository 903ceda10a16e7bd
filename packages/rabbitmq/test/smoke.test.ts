import { randomBytes } from 'node:crypto';
import { connect, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { amqpUrl } from '../../../test-support/services';
import { within } from '../../../test-support/timeout';

const suffix = randomBytes(5).toString('hex');
const workQueue = `smoke-work-${suffix}`;
const deadExchange = `smoke-dlx-${suffix}`;
const deadQueue = `smoke-dead-${suffix}`;

describe('RabbitMQ service (smoke)', () => {
  let connection: ChannelModel;

  beforeAll(async () => {
    connection = await connect(amqpUrl());
  });

  afterAll(async () => {
    const channel = await connection.createChannel();
    await channel.deleteQueue(workQueue);
    await channel.deleteQueue(deadQueue);
    await channel.deleteExchange(deadExchange);
    await connection.close();
  });

  it('publishes with confirms, acks one message and dead-letters a nacked one', async () => {
    const setup = await connection.createConfirmChannel();
    await setup.assertExchange(deadExchange, 'fanout', { durable: false });
    await setup.assertQueue(deadQueue, { durable: false });
    await setup.bindQueue(deadQueue, deadExchange, '');
    await setup.assertQueue(workQueue, {
      durable: false,
      arguments: { 'x-dead-letter-exchange': deadExchange },
    });

    // Publisher confirms: the broker acknowledges each publish.
    for (const id of ['good', 'bad']) {
      await new Promise<void>((resolve, reject) => {
        setup.sendToQueue(workQueue, Buffer.from(id), { messageId: id }, (error) =>
          error ? reject(error) : resolve(),
        );
      });
    }
    await setup.waitForConfirms();

    const consumer = await connection.createChannel();
    await consumer.prefetch(1);
    const handled: string[] = [];
    const bothHandled = new Promise<void>((resolve) => {
      void consumer.consume(
        workQueue,
        (message) => {
          if (!message) return;
          handled.push(message.properties.messageId as string);
          if (message.properties.messageId === 'good') consumer.ack(message);
          else consumer.nack(message, false, false);
          if (handled.length === 2) resolve();
        },
        { noAck: false },
      );
    });
    await within(10_000, 'two deliveries on the work queue', bothHandled);
    expect(handled).toEqual(['good', 'bad']);

    const dead = await within(
      10_000,
      'the nacked message on the dead-letter queue',
      new Promise<ConsumeMessage>((resolve) => {
        void consumer.consume(deadQueue, (message) => message && resolve(message), {
          noAck: true,
        });
      }),
    );
    expect(dead.properties.messageId).toBe('bad');
    const deaths = dead.properties.headers?.['x-death'] as Array<{ reason: string; queue: string }>;
    expect(deaths[0]).toMatchObject({ reason: 'rejected', queue: workQueue });

    const work = await consumer.checkQueue(workQueue);
    expect(work.messageCount).toBe(0);
    await consumer.close();
    await setup.close();
  });
});
