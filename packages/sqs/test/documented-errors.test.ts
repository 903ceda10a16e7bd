import {
  FinalError,
  isJustonceError,
  isRetentionTooShortError,
  type OutgoingMessage,
} from '@justonce/core';
import { createSqsPublisher, createSqsWorker, type SqsSettledEvent, type SqsWorker } from '../src';
import {
  TestQueues,
  openEffectsStore,
  sqsClientConfig,
  unique,
  type EffectsStore,
} from './support';
import { waitFor } from '../../../test-support/wait-for';

/**
 * The errors the README names, thrown or reported where it says, with the code it gives, for
 * those no other test shows: `SqsDeadLetterError`, `SqsStateError` after `stop` and after
 * `close`, and the retention check `start` makes (a `RetentionTooShortError` from the inbox).
 */

let store: EffectsStore;
let queues: TestQueues;
const workers: SqsWorker[] = [];

beforeAll(async () => {
  store = await openEffectsStore();
  queues = new TestQueues();
});

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 5_000 })));
});

afterAll(async () => {
  await queues.dispose();
  await store.dispose();
});

describe('SQS errors the README names', () => {
  it('reports SqsDeadLetterError (retriable) when the dead-letter queue does not take a message', async () => {
    const queueUrl = await queues.create(unique('dl-fails'));
    const settled: SqsSettledEvent[] = [];
    const worker = createSqsWorker({
      clientConfig: sqsClientConfig(),
      queueUrl,
      // A queue that does not exist: the worker checks only the queue it consumes at start.
      deadLetterQueueUrl: queueUrl.replace(/[^/]+$/, unique('missing-dlq')),
      inbox: { store, consumer: unique('c') },
      waitTimeSeconds: 1,
      handler: async () => {
        throw new FinalError('poison');
      },
      onSettled: (event) => settled.push(event),
    });
    workers.push(worker);
    await worker.start();
    await queues.send(queueUrl, [{ body: 'x', attributes: { 'message-id': 'dl-1' } }]);

    await waitFor('the dead-lettered message to settle', () => settled.length > 0);
    const [event] = settled;
    expect(event).toMatchObject({
      action: 'left-in-flight',
      outcome: { status: 'dead-lettered', reason: 'NON_RETRIABLE' },
    });
    expect(isJustonceError(event!.error)).toBe(true);
    expect(event!.error).toMatchObject({
      name: 'SqsDeadLetterError',
      code: 'SQS_DEAD_LETTER_FAILED',
      retriable: true,
    });
  });

  it('start rejects inbox settings whose retentionMs is below the queue retention (RetentionTooShortError)', async () => {
    const queueUrl = await queues.create(unique('short'), { MessageRetentionPeriod: '120' });
    const worker = createSqsWorker({
      clientConfig: sqsClientConfig(),
      queueUrl,
      inbox: { store, consumer: unique('c'), retentionMs: 60_000 },
      handler: async () => undefined,
    });
    workers.push(worker);
    const caught: unknown = await worker.start().catch((error: unknown) => error);
    expect(isRetentionTooShortError(caught)).toBe(true);
    expect(caught).toMatchObject({
      name: 'RetentionTooShortError',
      code: 'INVALID_CONFIG',
      retentionMs: 60_000,
    });
    // The queue's own retention (ElasticMQ may keep its default rather than the one asked).
    expect((caught as { redeliveryHorizonMs: number }).redeliveryHorizonMs).toBeGreaterThan(60_000);
  });

  it('rejects start after stop with SqsStateError', async () => {
    const worker = createSqsWorker({
      clientConfig: sqsClientConfig(),
      queueUrl: await queues.create(unique('stopped')),
      inbox: { store, consumer: unique('c') },
      handler: async () => undefined,
    });
    await worker.stop();
    await expect(worker.start()).rejects.toMatchObject({
      name: 'SqsStateError',
      code: 'SQS_INVALID_STATE',
      retriable: false,
    });
  });

  it('rejects publish after close with SqsStateError', async () => {
    const publisher = createSqsPublisher({ clientConfig: sqsClientConfig() });
    await publisher.close();
    const message: OutgoingMessage = {
      destination: 'anything',
      key: null,
      messageId: 'm-1',
      headers: {},
      payload: new Uint8Array([1]),
    };
    await expect(publisher.publish([message])).rejects.toMatchObject({
      name: 'SqsStateError',
      code: 'SQS_INVALID_STATE',
    });
  });
});
