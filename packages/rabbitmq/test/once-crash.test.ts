import { createRabbitConsumer } from '../src';
import { databaseUrl } from '../../core/test/db';
import { killCrashChildren } from '../../../test-support/crash-child';
import { openEffectsStore, type EffectsStore } from '../../../test-support/effects';
import { checkOnceCrash } from '../../../test-support/once-crash';
import { amqpUrl, openAdmin, uniqueName, type Admin } from './broker';

let store: EffectsStore;
let admin: Admin;

beforeAll(async () => {
  store = await openEffectsStore();
  admin = await openAdmin();
});
afterEach(async () => {
  await killCrashChildren();
});
afterAll(async () => {
  await admin.close();
  await store.dispose();
});

it('ctx.once on RabbitMQ: killed between the remote call and its record, the redelivery calls again with the same key, once; killed after the record, never again', async () => {
  const queue = uniqueName('once');
  const consumer = uniqueName('c');
  const messageId = `${consumer}-1`;
  await admin.channel.assertQueue(queue, { durable: true });
  admin.channel.sendToQueue(queue, Buffer.from('payload'), { messageId, persistent: true });
  await checkOnceCrash({
    store,
    databaseUrl: databaseUrl(),
    consumer,
    messageId,
    transport: { kind: 'rabbitmq', options: { url: amqpUrl(), queue } },
    afterRecord: true,
    finish: async (inbox, handler) => {
      const rabbit = createRabbitConsumer({ url: amqpUrl(), queue, inbox, handler });
      await rabbit.start();
      return async () => {
        await rabbit.stop();
        const t = rabbit.topology();
        await admin.remove({
          queues: [t.queue, ...t.retryQueues, t.deadLetterQueue!],
          exchanges: [t.deadLetterExchange],
        });
      };
    },
  });
});
