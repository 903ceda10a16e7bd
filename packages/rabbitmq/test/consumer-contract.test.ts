import {
  CONSUMER_CONTRACT_CLAUSES,
  checkConsumerContract,
  type ConsumerFeatures,
  type ContractCheck,
  type ContractConsumerSettings,
} from '@justonce/core/testing';
import type { ConsumeMessage } from 'amqplib';
import { openTestStore } from '../../core/test/db';
import { createRabbitConsumer, PARTITION_KEY_HEADER, type RabbitConsumer } from '../src';
import { amqpUrl, openAdmin, uniqueName, type Admin } from './broker';

/**
 * The shared consumer contract on the real broker, on both queue types, in message and in
 * batch mode. Each clause gets a fresh queue the consumer declares when it starts (so `send`
 * always finds it), and the topology is removed afterwards.
 */

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** A failed clause with its problem, so a failure says what went wrong, not only which. */
const failures = (checks: readonly ContractCheck[]): string[] =>
  checks.filter((c) => !c.ok).map((c) => `${c.clause}: ${c.problem ?? 'no problem given'}`);

describe('the RabbitMQ consumer keeps the consumer contract (real broker)', () => {
  let store: TestStore;
  let admin: Admin;
  const created: RabbitConsumer[] = [];

  beforeAll(async () => {
    store = await openTestStore('postgres');
    admin = await openAdmin();
  });
  afterAll(async () => {
    // The contract stopped every consumer; a second stop resolves at once.
    for (const consumer of created.splice(0)) {
      await consumer.stop();
      const t = consumer.topology();
      await admin.remove({
        queues: [t.queue, ...t.retryQueues, ...(t.deadLetterQueue ? [t.deadLetterQueue] : [])],
        exchanges: [t.deadLetterExchange],
      });
    }
    await admin.close();
    await store.dispose();
  });

  function consumerOf(
    queue: string,
    s: ContractConsumerSettings,
    queueArguments: Readonly<Record<string, unknown>>,
    mode: 'message' | 'batch',
  ): RabbitConsumer {
    const { extract, fallback } = s.messageId;
    const consumer = createRabbitConsumer({
      url: amqpUrl(),
      queue,
      queueArguments,
      mode,
      inbox: s.inbox,
      handler: s.handler,
      onSettled: s.onSettled,
      messageId: {
        fallback,
        ...(extract === undefined
          ? {}
          : { extract: (m: ConsumeMessage) => extract(m.content.toString('utf8')) }),
      },
      ...(s.concurrency === undefined ? {} : { concurrency: s.concurrency }),
    });
    created.push(consumer);
    return consumer;
  }

  const quorum = { 'x-queue-type': 'quorum' };
  it.each<[string, Readonly<Record<string, unknown>>, 'message' | 'batch', ConsumerFeatures]>([
    // One queue hands its messages to every free handler: no order by key to declare.
    ['a classic queue, message mode', {}, 'message', {}],
    // `receiveCount` is the broker's `x-delivery-count` of one copy; a retry goes out as a new
    // copy through a retry queue, so the count starts again and does not grow 1, 2, 3.
    ['a quorum queue, message mode', quorum, 'message', {}],
    ['a classic queue, batch mode', {}, 'batch', { batchMode: true }],
    ['a quorum queue, batch mode', quorum, 'batch', { batchMode: true }],
  ])('passes every clause on %s', async (_, queueArguments, mode, features) => {
    const checks = await checkConsumerContract({
      store,
      newDestination: async () => uniqueName('contract'),
      send: async (queue, messages) => {
        for (const m of messages) {
          const headers: Record<string, string> = { ...m.headers };
          if (m.id !== undefined) headers['message-id'] = m.id;
          if (m.key !== undefined) headers[PARTITION_KEY_HEADER] = m.key;
          admin.channel.sendToQueue(queue, Buffer.from(m.body), { persistent: true, headers });
        }
      },
      createConsumer: (queue, settings) => consumerOf(queue, settings, queueArguments, mode),
      features,
    });
    expect(checks.map((c) => c.clause)).toEqual(Object.values(CONSUMER_CONTRACT_CLAUSES));
    expect(failures(checks)).toEqual([]);
  });
});
