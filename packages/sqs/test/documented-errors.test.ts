import type { Message } from '@aws-sdk/client-sqs';
import {
  createInbox,
  FinalError,
  isJustonceError,
  type OutgoingMessage,
  type SettledEvent,
} from '@justonce/core';
import { createSqsConsumer, createSqsPublisher, type SqsConsumer } from '../src';
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
 * those no other test shows: `SqsDeadLetterError`, core's `ConsumerStateError` after `stop`,
 * and `SqsStateError` after `close`.
 */

let store: EffectsStore;
let queues: TestQueues;
const consumers: SqsConsumer[] = [];

beforeAll(async () => {
  store = await openEffectsStore();
  queues = new TestQueues();
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((w) => w.stop({ timeoutMs: 5_000 })));
});

afterAll(async () => {
  await queues.dispose();
  await store.dispose();
});

describe('SQS errors the README names', () => {
  it('reports SqsDeadLetterError (retriable) when the dead-letter queue does not take a message', async () => {
    const queueUrl = await queues.create(unique('dl-fails'));
    const settled: SettledEvent<unknown, Message>[] = [];
    const sqsConsumer = createSqsConsumer({
      clientConfig: sqsClientConfig(),
      queueUrl,
      // A queue that does not exist: the consumer checks only the queue it consumes at start.
      deadLetter: { queueUrl: queueUrl.replace(/[^/]+$/, unique('missing-dlq')) },
      inbox: createInbox({ store, consumer: unique('c') }),
      waitTimeSeconds: 1,
      handler: async () => {
        throw new FinalError('poison');
      },
      onSettled: (event) => settled.push(event),
    });
    consumers.push(sqsConsumer);
    await sqsConsumer.start();
    await queues.send(queueUrl, [{ body: 'x', attributes: { 'message-id': 'dl-1' } }]);

    await waitFor('the dead-lettered message to settle', () => settled.length > 0);
    const [event] = settled;
    expect(event).toMatchObject({
      action: 'released',
      outcome: { status: 'dead-lettered', reason: 'NON_RETRIABLE' },
      messageId: 'dl-1',
      deadLetter: { reason: 'NON_RETRIABLE', messageId: 'dl-1' },
    });
    expect(isJustonceError(event!.error)).toBe(true);
    expect(event!.error).toMatchObject({
      name: 'SqsDeadLetterError',
      code: 'SQS_DEAD_LETTER_FAILED',
      retriable: true,
    });
  });

  it('rejects start after stop with ConsumerStateError', async () => {
    const sqsConsumer = createSqsConsumer({
      clientConfig: sqsClientConfig(),
      queueUrl: await queues.create(unique('stopped')),
      inbox: createInbox({ store, consumer: unique('c') }),
      handler: async () => undefined,
    });
    await sqsConsumer.stop();
    await expect(sqsConsumer.start()).rejects.toMatchObject({
      name: 'ConsumerStateError',
      code: 'CONSUMER_STATE',
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
