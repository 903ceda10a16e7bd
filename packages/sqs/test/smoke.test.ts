import { randomBytes } from 'node:crypto';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import {
  PREDEFINED_MAX_RECEIVE_COUNT,
  PREDEFINED_QUEUES,
  sqsClientConfig,
} from '../../../test-support/services';

const sqs = new SQSClient(sqsClientConfig());
const suffix = randomBytes(5).toString('hex');
const created: string[] = [];

async function createQueue(name: string, attributes: Record<string, string> = {}) {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
  );
  if (!QueueUrl) throw new Error(`no URL for queue ${name}`);
  created.push(QueueUrl);
  return QueueUrl;
}

async function queueArn(url: string): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  if (!Attributes?.QueueArn) throw new Error(`no ARN for ${url}`);
  return Attributes.QueueArn;
}

/** Long-polls, for at most about `seconds`, until `count` messages arrived. */
async function receive(url: string, count: number, seconds = 10): Promise<Message[]> {
  const messages: Message[] = [];
  const deadline = Date.now() + seconds * 1000;
  while (messages.length < count && Date.now() < deadline) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );
    messages.push(...Messages);
  }
  return messages;
}

/** Visible plus in-flight messages of a queue. */
async function messagesIn(url: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(Attributes?.ApproximateNumberOfMessages) +
    Number(Attributes?.ApproximateNumberOfMessagesNotVisible)
  );
}

describe('SQS service (smoke)', () => {
  afterAll(async () => {
    for (const url of created) await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    sqs.destroy();
  });

  it('sends, receives and deletes on a standard queue', async () => {
    const url = await createQueue(`smoke-standard-${suffix}`);
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'hello' }));
    const [message] = await receive(url, 1);
    expect(message?.Body).toBe('hello');
    await sqs.send(
      new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: message?.ReceiptHandle }),
    );
    expect(await messagesIn(url)).toBe(0);
  });

  it('keeps order and drops duplicates on a FIFO queue', async () => {
    const url = await createQueue(`smoke-${suffix}.fifo`, { FifoQueue: 'true' });
    const send = (body: string, deduplicationId: string) =>
      sqs.send(
        new SendMessageCommand({
          QueueUrl: url,
          MessageBody: body,
          MessageGroupId: 'group-1',
          MessageDeduplicationId: deduplicationId,
        }),
      );
    await send('a', 'id-a');
    await send('b', 'id-b');
    await send('a again', 'id-a');
    await send('c', 'id-c');
    const messages = await receive(url, 3);
    expect(messages.map((m) => m.Body)).toEqual(['a', 'b', 'c']);
    for (const message of messages) {
      await sqs.send(
        new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: message.ReceiptHandle }),
      );
    }
    expect(await messagesIn(url)).toBe(0);
  });

  it('moves a message to the dead-letter queue after maxReceiveCount receives', async () => {
    const maxReceiveCount = 2;
    const dlqUrl = await createQueue(`smoke-dlq-${suffix}`);
    const url = await createQueue(`smoke-redrive-${suffix}`, {
      VisibilityTimeout: '30',
      RedrivePolicy: JSON.stringify({
        deadLetterTargetArn: await queueArn(dlqUrl),
        maxReceiveCount,
      }),
    });
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'poison' }));

    for (let attempt = 1; attempt <= maxReceiveCount; attempt++) {
      const [message] = await receive(url, 1);
      expect(message?.Attributes?.ApproximateReceiveCount).toBe(String(attempt));
      // A failed handler: visible again at once, instead of waiting out the timeout.
      await sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: message?.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );
    }

    // The next receive exceeds maxReceiveCount: the server moves the message instead.
    expect(await receive(url, 1, 2)).toEqual([]);
    const [dead] = await receive(dlqUrl, 1);
    expect(dead?.Body).toBe('poison');
    expect(await messagesIn(url)).toBe(0);
  });

  it('has the predefined queues with their redrive policies', async () => {
    const pairs = [
      [PREDEFINED_QUEUES.standard, PREDEFINED_QUEUES.standardDlq],
      [PREDEFINED_QUEUES.fifo, PREDEFINED_QUEUES.fifoDlq],
    ] as const;
    for (const [source, dlq] of pairs) {
      const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: source }));
      const { QueueUrl: dlqUrl = '' } = await sqs.send(new GetQueueUrlCommand({ QueueName: dlq }));
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['RedrivePolicy'] }),
      );
      expect(JSON.parse(Attributes?.RedrivePolicy ?? '{}')).toEqual({
        deadLetterTargetArn: await queueArn(dlqUrl),
        maxReceiveCount: PREDEFINED_MAX_RECEIVE_COUNT,
      });
    }
  });
});
