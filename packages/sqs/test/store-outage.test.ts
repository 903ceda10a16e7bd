import type { Message } from '@aws-sdk/client-sqs';
import {
  createDeadLetters,
  createInbox,
  type HandlerContext,
  type SettledEvent,
} from '@justonce/core';
import { createSqsConsumer, type SqsConsumer, type SqsConsumerOptions } from '../src';
import {
  TestQueues,
  openEffectsStore,
  sqsClientConfig,
  unique,
  type EffectsStore,
} from './support';
import { waitFor } from '../../../test-support/wait-for';

/**
 * A dependency down for longer than several visibility timeouts: the inbox's `classify` calls
 * its error `'infrastructure'`, so `process` throws `StoreUnavailableError` (as for the store
 * itself). The consumer keeps the messages in flight (the heartbeat extends them) and retries
 * them in-process, instead of handing them back to SQS: each redelivery would raise
 * `ApproximateReceiveCount`, which the inbox counts as attempts, and dead-letter good
 * messages on `maxAttempts`.
 */

jest.setTimeout(60_000);

const VISIBILITY_SECONDS = 2;
const DOWN_MS = 3 * VISIBILITY_SECONDS * 1000;
const MESSAGES = 5;

class DependencyDown extends Error {
  override readonly name = 'DependencyDown';
}

let store: EffectsStore;
let queues: TestQueues;
const consumers: SqsConsumer[] = [];

beforeAll(async () => {
  store = await openEffectsStore();
  queues = new TestQueues();
});

afterAll(async () => {
  await Promise.all(consumers.map((w) => w.stop({ timeoutMs: 5_000 })));
  await queues.dispose();
  await store.dispose();
});

/** A final action: anything but `held` (reported at each round a message is held through). */
function final(event: SettledEvent<unknown, Message>): boolean {
  return event.action !== 'held';
}

/** Runs the scenario in `mode`; resolves what the handler and the consumer saw. */
async function holdThroughOutage(mode: SqsConsumerOptions['mode']) {
  const queueUrl = await queues.create(unique(`dep-down-${mode}`));
  const consumer = unique('c');
  const settled: SettledEvent<unknown, Message>[] = [];
  const failures = new Map<string, number>();
  const succeeded: Array<{ messageId: string; attempt: number }> = [];
  let upAt = Number.POSITIVE_INFINITY;
  const sqsConsumer = createSqsConsumer({
    clientConfig: sqsClientConfig(),
    queueUrl,
    mode,
    waitTimeSeconds: 1,
    visibilityTimeoutSeconds: VISIBILITY_SECONDS,
    retry: { baseMs: 100, capMs: 1_000 },
    inbox: createInbox({
      store,
      consumer,
      maxAttempts: 2,
      classify: (error) => (error instanceof DependencyDown ? 'infrastructure' : undefined),
    }),
    handler: async (ctx: HandlerContext) => {
      if (Date.now() < upAt) {
        failures.set(ctx.messageId, (failures.get(ctx.messageId) ?? 0) + 1);
        throw new DependencyDown('the pricing service is down');
      }
      succeeded.push({ messageId: ctx.messageId, attempt: ctx.attempt });
      await ctx.trx.raw(`insert into ${store.effectsTable} (consumer, message_id) values (?, ?)`, [
        consumer,
        ctx.messageId,
      ]);
    },
    onSettled: (event) => settled.push(event),
  });
  consumers.push(sqsConsumer);
  await sqsConsumer.start();
  const ids = Array.from({ length: MESSAGES }, (_, i) => `${mode}-${i}`);
  await queues.send(
    queueUrl,
    ids.map((id) => ({ body: id, attributes: { 'message-id': id } })),
  );
  await waitFor('every message failing once', () => failures.size === MESSAGES, {
    timeoutMs: 10_000,
  });
  upAt = Date.now() + DOWN_MS;
  await waitFor('every message settled', () => settled.filter(final).length >= MESSAGES, {
    timeoutMs: 30_000,
  });
  // Time for a redelivery (a visibility timeout that ran out) to show.
  await new Promise((resolve) => setTimeout(resolve, (VISIBILITY_SECONDS + 1) * 1000));
  return { ids, consumer, settled, failures, succeeded, depth: await queues.depth(queueUrl) };
}

describe.each(['message', 'batch'] as const)('a dependency down (%s mode)', (mode) => {
  it('holds the messages in flight through 3 visibility timeouts: each handled once, none charged or dead', async () => {
    const { ids, consumer, settled, failures, succeeded, depth } = await holdThroughOutage(mode);
    // The handler was tried again and again while the dependency was down…
    expect(Math.min(...failures.values())).toBeGreaterThan(2);
    // …and each message succeeded once, on its first counted attempt.
    expect(succeeded.map((s) => s.messageId).sort()).toEqual([...ids].sort());
    expect(succeeded.every((s) => s.attempt === 1)).toBe(true);
    const effects = await store.effectCounts(consumer);
    expect(ids.map((id) => effects.get(id))).toEqual(ids.map(() => 1));
    // One receive each: never handed back to SQS, so the receive count never rose.
    const done = settled.filter(final);
    expect(done).toHaveLength(MESSAGES);
    expect(done.every((e) => e.action === 'acked')).toBe(true);
    expect(done.map((e) => e.message.Attributes?.ApproximateReceiveCount)).toEqual(
      ids.map(() => '1'),
    );
    // Each was reported held, with the store's error and the wait, while the dependency was down.
    const held = settled.filter((e) => e.action === 'held');
    expect(new Set(held.map((e) => e.messageId))).toEqual(new Set(ids));
    expect(held.every((e) => e.error?.name === 'StoreUnavailableError')).toBe(true);
    expect(held.every((e) => e.outcome === undefined && (e.delayMs ?? -1) >= 0)).toBe(true);
    expect(await createDeadLetters(store).list({ consumer })).toEqual([]);
    expect(depth).toBe(0);
  });
});
