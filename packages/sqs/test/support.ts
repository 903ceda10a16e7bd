import { randomBytes } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
  type Message,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import { sqsClientConfig } from '../../../test-support/services';
import { openEffectsStore, type EffectsStore } from '../../../test-support/effects';
import type { SqsConsumer } from '../src';
import { useTestBed } from '../../../test-support/test-bed';

export { sqsClientConfig };
// The shared effects table, re-exported for the tests that import it from here.
export { openEffectsStore, type EffectsStore };

/** A unique queue or consumer name (FIFO names end in `.fifo`). */
export function unique(label: string, fifo = false): string {
  return `jo-${label}-${randomBytes(4).toString('hex')}${fifo ? '.fifo' : ''}`;
}

/** Queues created by a test file, and a client to manage them with. */
export class TestQueues {
  readonly sqs = new SQSClient(sqsClientConfig());
  private readonly created: string[] = [];

  /** Creates a queue; FIFO when `name` ends in `.fifo`. */
  async create(name: string, attributes: Record<string, string> = {}): Promise<string> {
    const fifo = name.endsWith('.fifo') ? { FifoQueue: 'true' } : {};
    const { QueueUrl } = await this.sqs.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { ...fifo, ...attributes } }),
    );
    if (!QueueUrl) throw new Error(`no URL for queue ${name}`);
    this.created.push(QueueUrl);
    return QueueUrl;
  }

  /** Creates a queue whose redrive policy moves messages to a new DLQ after `maxReceiveCount`. */
  async createWithDeadLetterQueue(
    label: string,
    maxReceiveCount: number,
    fifo = false,
    attributes: Record<string, string> = {},
  ): Promise<{ queueUrl: string; dlqUrl: string }> {
    const dlqUrl = await this.create(unique(`${label}-dlq`, fifo));
    const { Attributes } = await this.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }),
    );
    const queueUrl = await this.create(unique(label, fifo), {
      ...attributes,
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes?.QueueArn, maxReceiveCount }),
    });
    return { queueUrl, dlqUrl };
  }

  /** Sends messages (in batches of ten) to a queue. */
  async send(
    queueUrl: string,
    messages: Array<{
      body: string;
      attributes?: Record<string, string>;
      group?: string;
      dedupe?: string;
    }>,
  ): Promise<void> {
    for (let i = 0; i < messages.length; i += 10) {
      const chunk = messages.slice(i, i + 10);
      const response = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: chunk.map((m, j) => ({
            Id: `e${j}`,
            MessageBody: m.body,
            MessageAttributes: Object.fromEntries(
              Object.entries(m.attributes ?? {}).map(([k, v]): [string, MessageAttributeValue] => [
                k,
                { DataType: 'String', StringValue: v },
              ]),
            ),
            ...(m.group !== undefined ? { MessageGroupId: m.group } : {}),
            ...(m.dedupe !== undefined ? { MessageDeduplicationId: m.dedupe } : {}),
          })),
        }),
      );
      if (response.Failed?.length)
        throw new Error(`send failed: ${JSON.stringify(response.Failed)}`);
    }
  }

  /**
   * Long-polls a queue until `count` messages arrived or about `seconds` passed, deleting
   * what it receives (so a FIFO group moves on).
   */
  async receive(queueUrl: string, count: number, seconds = 10): Promise<Message[]> {
    const out: Message[] = [];
    const deadline = Date.now() + seconds * 1000;
    while (out.length < count && Date.now() < deadline) {
      const { Messages = [] } = await this.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      );
      out.push(...Messages);
      if (Messages.length > 0) {
        await this.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
          }),
        );
      }
    }
    return out;
  }

  /** Visible plus in-flight (plus delayed) messages of a queue. */
  async depth(queueUrl: string): Promise<number> {
    const { Attributes } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    return (
      Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
      Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0) +
      Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0)
    );
  }

  /** Deletes every queue created and destroys the client. */
  async dispose(): Promise<void> {
    for (const url of this.created.splice(0)) {
      await this.sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
    }
    this.sqs.destroy();
  }
}

/** What {@link useSqsTestBed} opens for a test file. */
export interface SqsTestBed {
  /** A store with the shared effects table. */
  readonly store: EffectsStore;
  readonly queues: TestQueues;
  /** Consumers to stop (waiting at most 5 s each) after each test. */
  readonly consumers: SqsConsumer[];
}

/**
 * Opens an effects store and a {@link TestQueues} before a test file's tests, stops the
 * consumers pushed onto `consumers` after each test, and deletes the queues and closes the
 * store after them all. Read the fields inside hooks and tests.
 */
export function useSqsTestBed(): SqsTestBed {
  return useTestBed<SqsTestBed>({
    open: async () => ({
      store: await openEffectsStore(),
      queues: new TestQueues(),
      consumers: [],
    }),
    afterEachTest: async ({ consumers }) => {
      await Promise.all(consumers.splice(0).map((c) => c.stop({ timeoutMs: 5_000 })));
    },
    close: async ({ queues, store }) => {
      await queues.dispose();
      await store.dispose();
    },
  });
}
