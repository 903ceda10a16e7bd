import { randomBytes } from 'node:crypto';
import { createInbox, DEAD_LETTER_HEADERS, type InboxStep } from '@justonce/core';
import { databaseUrl, openTestStore } from '../../core/test/db';
import { createRabbitConsumer, type RabbitConsumer } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import {
  killCrashChildren,
  spawnCrashChild,
  type CrashJob,
} from '../../../test-support/crash-child';
import { createEffectsTable, effectCounts, writeEffect } from '../../../test-support/effects';
import { amqpUrl, openAdmin, uniqueName, type Admin } from './broker';
import { EventLog } from './support';

/**
 * Runs the child consumer until it reports `job.stopAt`, kills it with SIGKILL there, and
 * resolves with the message id it was handling once the process is gone.
 */
async function runChildUntilKilled(job: CrashJob): Promise<string | undefined> {
  const child = spawnCrashChild(job);
  const { messageId } = await child.next('stopped');
  expect(await child.kill()).toBe('SIGKILL');
  return messageId;
}

describe('a consumer process killed with SIGKILL (real broker, PostgreSQL)', () => {
  let store: Awaited<ReturnType<typeof openTestStore>>;
  let admin: Admin;
  const cleanup: RabbitConsumer[] = [];

  beforeAll(async () => {
    store = await openTestStore('postgres');
    await createEffectsTable(store);
    admin = await openAdmin();
  });
  afterEach(async () => {
    await killCrashChildren();
    for (const consumer of cleanup.splice(0)) {
      await consumer.stop();
      const t = consumer.topology();
      await admin.remove({
        queues: [t.queue, ...t.retryQueues, t.deadLetterQueue!],
        exchanges: [t.deadLetterExchange],
      });
    }
  });
  afterAll(async () => {
    await admin.close();
    await store.dispose();
  });

  /** The in-process consumer that takes over after the child died. */
  async function survivor(queue: string, consumer: string, maxAttempts: number, log: EventLog) {
    const rabbit = createRabbitConsumer({
      url: amqpUrl(),
      queue,
      inbox: createInbox({ store, consumer, maxAttempts }),
      handler: async (ctx) => writeEffect(ctx.trx, store, ctx.messageId, { note: 'survivor' }),
      ...log.hooks,
    });
    cleanup.push(rabbit);
    await rabbit.start();
    return rabbit;
  }

  async function setup(stopAt: InboxStep, maxAttempts = 5) {
    const queue = uniqueName('crash');
    const consumer = `crash-${randomBytes(4).toString('hex')}`;
    const messageId = `m-${randomBytes(4).toString('hex')}`;
    await admin.channel.assertQueue(queue, { durable: true });
    admin.channel.sendToQueue(queue, Buffer.from('{}'), { messageId, persistent: true });
    const job: CrashJob = {
      databaseUrl: databaseUrl(),
      schema: store.schema,
      consumer,
      maxAttempts,
      stopAt,
      transport: { kind: 'rabbitmq', options: { url: amqpUrl(), queue } },
    };
    return { queue, consumer, messageId, job };
  }

  it.each([
    ['after the business write, before the commit', 'handler-done', 'processed'],
    ['after the commit, before the acknowledgement', 'committed', 'duplicate'],
  ] as const)(
    'killed %s: the broker redelivers and the effect is applied once',
    async (_, stopAt, expected) => {
      const { queue, consumer, messageId, job } = await setup(stopAt);

      expect(await runChildUntilKilled(job)).toBe(messageId);

      const log = new EventLog();
      await survivor(queue, consumer, 5, log);
      await log.next('the redelivery settled', (e) => e.type === 'settled', 15_000, true);
      expect(log.settled().map((e) => [e.messageId, e.action, e.outcome?.status])).toEqual([
        [messageId, 'acked', expected],
      ]);
      expect((await effectCounts(store)).get(messageId)).toBe(1);
      await waitFor('the queue to be empty', async () => (await admin.depth(queue)) === 0);
    },
  );

  it('dead-letters a message that kills the process every time, counted by the redelivered flag and the store', async () => {
    const { queue, consumer, messageId, job } = await setup('handler-done', 2);

    expect(await runChildUntilKilled(job)).toBe(messageId); // delivery 1
    expect(await runChildUntilKilled(job)).toBe(messageId); // delivery 2, redelivered

    const log = new EventLog();
    const rabbit = await survivor(queue, consumer, 2, log);
    await log.next('the dead letter', (e) => e.type === 'settled', 15_000, true);
    expect(log.settled().map((e) => [e.messageId, e.action])).toEqual([
      [messageId, 'dead-lettered'],
    ]);
    const dead = await waitFor('the dead-letter queue to hold it', async () => {
      const messages = await admin.drain(rabbit.topology().deadLetterQueue!);
      return messages.length > 0 ? messages : undefined;
    });
    const headers = dead[0]!.properties.headers as Record<string, unknown>;
    expect(headers[DEAD_LETTER_HEADERS.reason]).toBe('MAX_ATTEMPTS');
    expect(headers[DEAD_LETTER_HEADERS.attempts]).toBe('3');
    expect(headers[DEAD_LETTER_HEADERS.messageId]).toBe(messageId);
    expect((await effectCounts(store)).has(messageId)).toBe(false);
  });
});
