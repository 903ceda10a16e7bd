import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInbox, type InboxOutcome } from '@justonce/core';
import { createSqsConsumer, type SqsConsumer } from '../src';
import { databaseUrl } from '../../core/test/db';
import { sqsEndpoint } from '../../../test-support/services';
import {
  TestQueues,
  openEffectsStore,
  sqsClientConfig,
  unique,
  type EffectsStore,
} from './support';
import { waitFor } from '../../../test-support/wait-for';
import { spawnUntilMarker } from '../../../test-support/child-process';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CHILD = path.join(__dirname, 'crash-child.ts');

let store: EffectsStore;
let queues: TestQueues;
const children: ChildProcess[] = [];
const consumers: SqsConsumer[] = [];

beforeAll(async () => {
  store = await openEffectsStore();
  queues = new TestQueues();
});

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  await Promise.all(consumers.splice(0).map((w) => w.stop({ timeoutMs: 5_000 })));
});

afterAll(async () => {
  await queues.dispose();
  await store.dispose();
});

/** Starts the child consumer and resolves once it printed `AT-STEP` (or rejects if it exits). */
function runChildUntilStep(envs: Record<string, string>): Promise<ChildProcess> {
  return spawnUntilMarker(CHILD, {
    cwd: ROOT,
    env: envs,
    onSpawn: (child) => children.push(child),
  });
}

describe('a consumer process killed with SIGKILL in the middle of a handler', () => {
  it.each([
    ['handler-done', 'with its transaction open'],
    ['committed', 'after its transaction committed, before the delete'],
  ])('at %s (%s): SQS redelivers and every message has exactly one effect', async (step) => {
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

    const child = await runChildUntilStep({
      SQS_ENDPOINT: sqsEndpoint(),
      DATABASE_URL: databaseUrl(),
      CRASH_SCHEMA: store.schema,
      CRASH_QUEUE_URL: queueUrl,
      CRASH_CONSUMER: consumer,
      CRASH_STEP: step!,
      CRASH_AFTER: '5',
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect(child.signalCode).toBe('SIGKILL');

    const outcomes: InboxOutcome[] = [];
    const takeover = createSqsConsumer({
      clientConfig: sqsClientConfig(),
      queueUrl,
      concurrency: 4,
      waitTimeSeconds: 1,
      inbox: createInbox({ store, consumer }),
      handler: async (ctx) => {
        await ctx.trx.raw(
          `insert into ${store.effectsTable} (consumer, message_id, note) values (?, ?, ?)`,
          [consumer, ctx.messageId, 'takeover'],
        );
      },
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
    const notes = (await store.effects(consumer)).map((e) => e.note);
    // The child committed some work before it died, and the takeover did the rest.
    expect(notes.filter((n) => n === 'child').length).toBeGreaterThan(0);
    expect(notes.filter((n) => n === 'takeover').length).toBeGreaterThan(0);
    if (step === 'committed') {
      // The message committed in the database but never deleted comes back as a duplicate.
      expect(outcomes.some((o) => o.status === 'duplicate')).toBe(true);
    }
  });
});
