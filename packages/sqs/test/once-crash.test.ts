import { createSqsConsumer } from '../src';
import { databaseUrl } from '../../core/test/db';
import { TestQueues, sqsClientConfig, unique } from './support';
import { killCrashChildren } from '../../../test-support/crash-child';
import { openEffectsStore, type EffectsStore } from '../../../test-support/effects';
import { checkOnceCrash } from '../../../test-support/once-crash';

let store: EffectsStore;
let queues: TestQueues;

beforeAll(async () => {
  store = await openEffectsStore();
  queues = new TestQueues();
});
afterEach(async () => {
  await killCrashChildren();
});
afterAll(async () => {
  await queues.dispose();
  await store.dispose();
});

it('ctx.once on SQS: killed between the remote call and its record, the redelivery calls again with the same key, once', async () => {
  const queueUrl = await queues.create(unique('once'), { VisibilityTimeout: '2' });
  const consumer = unique('c');
  const messageId = `${consumer}-1`;
  await queues.send(queueUrl, [{ body: 'payload', attributes: { 'message-id': messageId } }]);
  const options = { clientConfig: sqsClientConfig(), queueUrl, waitTimeSeconds: 1 };
  await checkOnceCrash({
    store,
    databaseUrl: databaseUrl(),
    consumer,
    messageId,
    transport: { kind: 'sqs', options: { ...options, visibilityTimeoutSeconds: 2 } },
    finish: async (inbox, handler) => {
      const worker = createSqsConsumer({ ...options, inbox, handler });
      await worker.start();
      return () => worker.stop({ timeoutMs: 5_000 });
    },
  });
});
