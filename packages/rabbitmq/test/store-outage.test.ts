/**
 * A dependency down for longer than `maxAttempts` quick redeliveries would take: the handler
 * throws an error the inbox's `classify` names `'infrastructure'`, so `inbox.process` throws
 * STORE_UNAVAILABLE, as it does when the store itself fails. The consumer must hold each
 * delivery unacknowledged and retry it in-process: no nack, no retry copy, no redelivery
 * (each would raise a quorum queue's delivery count, which the inbox counts as an attempt),
 * so nothing is dead-lettered and every message is handled once, as its first attempt.
 */
import { createDeadLetters, createInbox, type InboxOutcome } from '@justonce/core';
import { openTestStore } from '../../core/test/db';
import { createRabbitConsumer, type RabbitConsumer } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { amqpUrl, openAdmin, uniqueName, type Admin } from './broker';
import { createEffectsTable, effectCounts, EventLog, writeEffect } from './support';

jest.setTimeout(60_000);

/** A dependency of the handler (a payment API, say) that is down. */
class DependencyDown extends Error {
  constructor() {
    super('the payment service does not answer');
    this.name = 'DependencyDown';
  }
}

const MESSAGES = 10;
const DOWN_FOR_MS = 4_000;
const MAX_ATTEMPTS = 2;

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

let store: TestStore;
let admin: Admin;
let consumer: RabbitConsumer | undefined;
const queue = uniqueName('store-outage');
const stoppedQueue = uniqueName('store-outage-stop');

beforeAll(async () => {
  store = await openTestStore('postgres');
  await createEffectsTable(store);
  admin = await openAdmin();
});

afterAll(async () => {
  await consumer?.stop();
  if (consumer) {
    const t = consumer.topology();
    await admin
      .remove({
        queues: [t.queue, ...t.retryQueues, ...(t.deadLetterQueue ? [t.deadLetterQueue] : [])],
        exchanges: [t.deadLetterExchange],
      })
      .catch(() => undefined);
  }
  await admin.remove({ queues: [stoppedQueue, `${stoppedQueue}.dead`] }).catch(() => undefined);
  await admin.remove({ exchanges: [`${stoppedQueue}.dlx`] }).catch(() => undefined);
  await admin.close();
  await store.dispose();
});

describe('the store (or a dependency classified infrastructure) unavailable', () => {
  it('holds deliveries unacknowledged until it answers: each handled once, none dead', async () => {
    const log = new EventLog();
    const calls = new Map<string, number>();
    let downUntil = 0;
    consumer = createRabbitConsumer({
      url: amqpUrl(),
      queue,
      queueArguments: { 'x-queue-type': 'quorum' },
      inbox: createInbox({
        store,
        consumer: 'store-outage-test',
        maxAttempts: MAX_ATTEMPTS,
        classify: (error) => (error instanceof DependencyDown ? 'infrastructure' : undefined),
      }),
      // Quick in-process retries, so recovery is seen soon after the dependency is back.
      storeRetry: { baseMs: 50, capMs: 400 },
      retry: { delaysMs: [100] },
      handler: async (ctx) => {
        calls.set(ctx.messageId, (calls.get(ctx.messageId) ?? 0) + 1);
        if (Date.now() < downUntil) throw new DependencyDown();
        await writeEffect(ctx.trx, store, ctx.messageId);
      },
      ...log.hooks,
    });
    await consumer.start();

    downUntil = Date.now() + DOWN_FOR_MS;
    const ids = Array.from({ length: MESSAGES }, (_, i) => `outage-${i}`);
    for (const id of ids) {
      admin.channel.sendToQueue(queue, Buffer.from(id), { persistent: true, messageId: id });
    }
    const counts = await waitFor(
      `all ${MESSAGES} messages handled`,
      async () => {
        const now = await effectCounts(store);
        return ids.every((id) => now[id] !== undefined) ? now : undefined;
      },
      { timeoutMs: DOWN_FOR_MS + 20_000, intervalMs: 100 },
    );
    const recoveredAfterMs = Date.now() - downUntil;

    const held = log.settled('held');
    const acked = log.settled('acked');
    const attempts = acked.map(
      (e) => (e.outcome as Extract<InboxOutcome, { status: 'processed' }> | undefined)?.attempt,
    );
    const depth = await admin.depth(consumer.topology().deadLetterQueue!);
    const deadLetters = await createDeadLetters(store).list({ consumer: 'store-outage-test' });
    console.log(
      JSON.stringify({
        test: 'rabbitmq-store-outage-hold',
        messages: MESSAGES,
        downForMs: DOWN_FOR_MS,
        handlerCallsForFirst: calls.get(ids[0]!),
        heldRetries: held.length,
        recoveredAfterMs,
        deadLetters: deadLetters.length,
      }),
    );

    // Every message applied exactly once, as the first attempt: never charged for the outage.
    for (const id of ids) expect(counts[id]).toBe(1);
    expect(acked.map((e) => e.messageId).sort()).toEqual([...ids].sort());
    expect(attempts.every((attempt) => attempt === 1)).toBe(true);
    // The first message met the outage many times more than maxAttempts allows.
    expect(calls.get(ids[0]!)!).toBeGreaterThan(MAX_ATTEMPTS * 2);
    expect(held.length).toBeGreaterThan(MAX_ATTEMPTS * 2);
    // Held, not sent around: no retry copy, no requeue, nothing dead-lettered anywhere.
    const otherActions = log.settled().filter((e) => e.action !== 'acked' && e.action !== 'held');
    expect(otherActions).toEqual([]);
    expect(deadLetters).toEqual([]);
    expect(depth).toBe(0);
    expect(consumer.topology().retryQueues).toEqual([]);
  });

  it('releases a held delivery to the queue when the consumer stops', async () => {
    const log = new EventLog();
    const stopping = createRabbitConsumer({
      url: amqpUrl(),
      queue: stoppedQueue,
      inbox: createInbox({
        store,
        consumer: 'store-outage-stop-test',
        maxAttempts: MAX_ATTEMPTS,
        classify: (error) => (error instanceof DependencyDown ? 'infrastructure' : undefined),
      }),
      storeRetry: { baseMs: 50, capMs: 200 },
      handler: async () => {
        throw new DependencyDown();
      },
      ...log.hooks,
    });
    await stopping.start();
    admin.channel.sendToQueue(stoppedQueue, Buffer.from('x'), { messageId: 'held-on-stop' });
    await log.next(
      'a delivery held three times',
      (e) => e.type === 'settled' && e.action === 'held' && log.settled('held').length >= 3,
    );
    await stopping.stop();

    const held = log.settled('held');
    expect(held.every((e) => e.messageId === 'held-on-stop' && e.delayMs !== undefined)).toBe(true);
    expect(
      log
        .settled()
        .filter((e) => e.action !== 'held')
        .map((e) => [e.messageId, e.action]),
    ).toEqual([['held-on-stop', 'released']]);
    // Back in the queue, unprocessed, for whoever consumes next.
    await waitFor('the message back in the queue', async () =>
      (await admin.depth(stoppedQueue)) === 1 ? true : undefined,
    );
  });
});
