import { randomUUID } from 'node:crypto';
import type { Message } from '@aws-sdk/client-sqs';
import {
  CONSUMER_CONTRACT_CLAUSES,
  checkConsumerContract,
  type ConsumerFeatures,
  type ContractCheck,
  type ContractConsumerSettings,
  type ContractMessage,
} from '@justonce/core/testing';
import { createSqsConsumer } from '../src';
import { openTestStore } from '../../core/test/db';
import { TestQueues, sqsClientConfig, unique } from './support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

let store: TestStore;
let queues: TestQueues;

beforeAll(async () => {
  store = await openTestStore('postgres');
  queues = new TestQueues();
});

afterAll(async () => {
  await queues.dispose();
  await store.dispose();
});

/** One queue kind and mode the contract runs on. */
interface Variant {
  readonly name: string;
  readonly fifo: boolean;
  readonly mode: 'message' | 'batch';
  readonly features: ConsumerFeatures;
}

const VARIANTS: readonly Variant[] = [
  { name: 'standard queue, message mode', fifo: false, mode: 'message', features: {} },
  { name: 'standard queue, batch mode', fifo: false, mode: 'batch', features: { batchMode: true } },
  {
    name: 'FIFO queue, message mode',
    fifo: true,
    mode: 'message',
    features: { ordersByKey: true },
  },
  {
    name: 'FIFO queue, batch mode',
    fifo: true,
    mode: 'batch',
    features: { ordersByKey: true, batchMode: true },
  },
];

/** Sends the contract's messages as a producer would: the id in the `message-id` attribute. */
async function send(fifo: boolean, queueUrl: string, messages: readonly ContractMessage[]) {
  await queues.send(
    queueUrl,
    messages.map((m) => ({
      body: m.body,
      attributes: { ...m.headers, ...(m.id === undefined ? {} : { 'message-id': m.id }) },
      ...(fifo
        ? {
            // The key is the group; a message without one goes in the group of its id, so the
            // copies of one id keep their order as the publisher would send them.
            group: m.key ?? m.id ?? 'contract',
            // A deduplication id of its own per send: SQS would drop a copy sent with the
            // same one, and the contract's copies are there to test the inbox's deduplication.
            dedupe: randomUUID(),
          }
        : {}),
    })),
  );
}

/** The SQS consumer built from the contract's settings. */
function consumerOf(variant: Variant, queueUrl: string, s: ContractConsumerSettings) {
  const { extract, fallback } = s.messageId;
  return createSqsConsumer({
    clientConfig: sqsClientConfig(),
    queueUrl,
    mode: variant.mode,
    inbox: s.inbox,
    handler: s.handler,
    onSettled: s.onSettled,
    messageId: {
      fallback,
      ...(extract === undefined ? {} : { extract: (m: Message) => extract(m.Body ?? '') }),
    },
    ...(s.concurrency === undefined ? {} : { concurrency: s.concurrency }),
    // Short long polls and holds, so the clauses' stops and outage rounds stay short.
    waitTimeSeconds: 1,
    retry: { baseMs: 100, capMs: 1_000 },
  });
}

/** The failed clauses with their problems, for a readable failure. */
const failed = (checks: readonly ContractCheck[]): string[] =>
  checks.filter((c) => !c.ok).map((c) => `${c.clause}: ${c.problem ?? ''}`);

describe('the SQS consumer keeps the consumer contract (ElasticMQ)', () => {
  it.each(VARIANTS)('on a $name', async (variant) => {
    const started = Date.now();
    const checks = await checkConsumerContract({
      store,
      newDestination: () => queues.create(unique('cc', variant.fifo)),
      send: (queueUrl, messages) => send(variant.fifo, queueUrl, messages),
      createConsumer: (queueUrl, settings) => consumerOf(variant, queueUrl, settings),
      features: { reportsReceiveCount: true, ...variant.features },
    });
    expect(failed(checks)).toEqual([]);
    expect(checks.map((c) => c.clause)).toEqual(Object.values(CONSUMER_CONTRACT_CLAUSES));
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});
