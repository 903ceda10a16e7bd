import { checkPublisherContract } from '@justonce/core/testing';
import { createSqsPublisher, fromMessageAttributes } from '../src';
import { TestQueues, sqsClientConfig, unique } from './support';

let queues: TestQueues;

beforeAll(() => {
  queues = new TestQueues();
});

afterAll(async () => {
  await queues.dispose();
});

describe('the SQS publisher (ElasticMQ)', () => {
  it('keeps the publisher contract the relay relies on, on a FIFO queue', async () => {
    // A FIFO queue carries the key as the message group and keeps each group's order.
    const queueUrl = await queues.create(unique('contract', true));
    const checks = await checkPublisherContract({
      publisher: createSqsPublisher({ clientConfig: sqsClientConfig() }),
      destination: queueUrl,
      invalidDestination: 'not a queue!',
      receive: async (destination, count) =>
        (await queues.receive(destination, count)).map((m) => {
          const headers = fromMessageAttributes(m.MessageAttributes ?? {});
          const messageId = headers['message-id'] ?? '';
          // A message without a key is its own group, named after its message id.
          const group = m.Attributes?.MessageGroupId;
          return {
            messageId,
            key: group === messageId ? null : (group ?? null),
            headers,
            payload: new TextEncoder().encode(m.Body ?? ''),
          };
        }),
    });
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks).toHaveLength(6);
  });

  it('keeps it on a standard queue, which does not order and does not carry keys', async () => {
    const queueUrl = await queues.create(unique('contract'));
    const checks = await checkPublisherContract({
      publisher: createSqsPublisher({ clientConfig: sqsClientConfig() }),
      destination: queueUrl,
      invalidDestination: 'not a queue!',
      ordersByKey: false,
      receive: async (destination, count) =>
        (await queues.receive(destination, count)).map((m) => {
          const headers = fromMessageAttributes(m.MessageAttributes ?? {});
          return {
            messageId: headers['message-id'] ?? '',
            headers,
            payload: new TextEncoder().encode(m.Body ?? ''),
          };
        }),
    });
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks).toHaveLength(5);
  });
});
