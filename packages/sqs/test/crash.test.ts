import { createInbox, type InboxOutcome } from '@justonce/core';
import { createSqsConsumer, type SqsConsumer } from '../src';
import { databaseUrl } from '../../core/test/db';
import { TestQueues, sqsClientConfig, unique } from './support';
import { waitFor } from '../../../test-support/wait-for';
import { killCrashChildren, spawnCrashChild } from '../../../test-support/crash-child';
import {
  doubledAndMissing,
  openEffectsStore,
  writeEffect,
  type EffectsStore,
} from '../../../test-support/effects';

let store: EffectsStore;
let queues: TestQueues;
const consumers: SqsConsumer[] = [];

beforeAll(async () => {
  store = await openEffectsStore();
  queues = new TestQueues();
});

afterEach(async () => {
  await killCrashChildren();
  await Promise.all(consumers.splice(0).map((w) => w.stop({ timeoutMs: 5_000 })));
});

afterAll(async () => {
  await queues.dispose();
  await store.dispose();
});

describe('a consumer process killed with SIGKILL in the middle of a handler', () => {
  it.each([
    ['handler-done', 'with its transaction open'],
    ['committed', 'after its transaction committed, before the delete'],
  ] as const)(
    'at %s (%s): SQS redelivers and every message has exactly one effect',
    async (step, _when) => {
      const total = 20;
      const queueUrl = await queues.create(unique('crash'), { VisibilityTimeout: '2' });
      const consumer = unique('c');
      await queues.send(
        queueUrl,
        Array.from({ length: total }, (_, i) => ({
          body: String(i),
          attributes: { 'message-id': `${consumer}-${i}` },
        })),
      );

      const child = spawnCrashChild({
        databaseUrl: databaseUrl(),
        schema: store.schema,
        consumer,
        stopAt: step,
        stopAfter: 5,
        transport: {
          kind: 'sqs',
          options: {
            clientConfig: sqsClientConfig(),
            queueUrl,
            concurrency: 4,
            waitTimeSeconds: 1,
            visibilityTimeoutSeconds: 2,
          },
        },
      });
      await child.next('stopped');
      expect(await child.kill()).toBe('SIGKILL');

      const outcomes: InboxOutcome[] = [];
      const takeover = createSqsConsumer({
        clientConfig: sqsClientConfig(),
        queueUrl,
        concurrency: 4,
        waitTimeSeconds: 1,
        inbox: createInbox({ store, consumer }),
        handler: (ctx) =>
          writeEffect(ctx.trx, store, ctx.messageId, { consumer, note: 'takeover' }),
        onSettled: (event) => {
          if (event.outcome) outcomes.push(event.outcome);
        },
      });
      consumers.push(takeover);
      await takeover.start();

      await waitFor(
        'every message to take effect',
        async () => (await store.effectCounts(consumer)).size === total,
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      await waitFor('an empty queue', async () => (await queues.depth(queueUrl)) === 0, {
        timeoutMs: 15_000,
        intervalMs: 100,
      });

      const counts = await store.effectCounts(consumer);
      expect(counts.size).toBe(total);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
      const ids = Array.from({ length: total }, (_, i) => `${consumer}-${i}`);
      expect(doubledAndMissing(counts, ids)).toEqual({ doubled: [], missing: [], unexpected: [] });
      const notes = (await store.effects(consumer)).map((e) => e.note);
      // The child committed some work before it died, and the takeover did the rest.
      expect(notes.filter((n) => n === 'child').length).toBeGreaterThan(0);
      expect(notes.filter((n) => n === 'takeover').length).toBeGreaterThan(0);
      if (step === 'committed') {
        // The message committed in the database but never deleted comes back as a duplicate.
        expect(outcomes.some((o) => o.status === 'duplicate')).toBe(true);
      }
    },
  );
});
