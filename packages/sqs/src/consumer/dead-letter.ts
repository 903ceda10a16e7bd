import {
  SendMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { MAX_MESSAGE_ATTRIBUTES } from '../attributes';
import { fifoId } from '../publisher/entry';
import { timeLimited } from '../time-limits';

/** Message attributes the worker adds to a message it forwards to a dead-letter queue. */
export const DEAD_LETTER_ATTRIBUTES = {
  /** Short machine-readable reason, e.g. `MAX_ATTEMPTS` or `UNDECODABLE_BODY`. */
  reason: 'x-dead-letter-reason',
  /** Id of the dead letter in the justonce store. */
  deadLetterId: 'x-dead-letter-id',
  /** The consumer (inbox) that gave up on the message. */
  consumer: 'x-dead-letter-consumer',
  /** The error message that dead-lettered the message (truncated to 1 000 characters). */
  error: 'x-dead-letter-error',
  /** The queue the message was consumed from. */
  sourceQueue: 'x-original-queue',
} as const;

/** What a forwarded message records about why it was dead-lettered. @internal */
export interface DeadLetterFacts {
  readonly reason: string;
  readonly deadLetterId: string;
  readonly consumer: string;
  readonly error: string;
  readonly sourceQueue: string;
}

/**
 * Sends `message` to the dead-letter queue with its body and attributes unchanged, plus as
 * many {@link DEAD_LETTER_ATTRIBUTES} as fit within SQS's 10 attributes (the store's dead
 * letter has all of it). To a FIFO queue it goes in its original group, with its SQS
 * `MessageId` as deduplication id, so a resend after a crash is dropped by SQS. If SQS
 * refuses the message with the added attributes (e.g. it grew over the size limit), it is
 * sent once more with its own attributes only. Each send is limited to `requestMs`. @internal
 */
export async function forwardToDeadLetterQueue(
  client: SQSClient,
  deadLetterQueueUrl: string,
  fifo: boolean,
  message: Message,
  facts: DeadLetterFacts,
  requestMs: number,
): Promise<void> {
  const own: Record<string, MessageAttributeValue> = { ...message.MessageAttributes };
  const withFacts: Record<string, MessageAttributeValue> = { ...own };
  const extras: [string, string][] = [
    [DEAD_LETTER_ATTRIBUTES.reason, facts.reason],
    [DEAD_LETTER_ATTRIBUTES.deadLetterId, facts.deadLetterId],
    [DEAD_LETTER_ATTRIBUTES.consumer, facts.consumer],
    [DEAD_LETTER_ATTRIBUTES.error, facts.error.slice(0, 1000)],
    [DEAD_LETTER_ATTRIBUTES.sourceQueue, facts.sourceQueue],
  ];
  for (const [name, value] of extras) {
    if (Object.keys(withFacts).length >= MAX_MESSAGE_ATTRIBUTES) break;
    if (value !== '' && withFacts[name] === undefined) {
      withFacts[name] = { DataType: 'String', StringValue: value };
    }
  }
  const send = (attributes: Record<string, MessageAttributeValue>) =>
    timeLimited('SendMessage', requestMs, (signal) =>
      client.send(
        new SendMessageCommand({
          QueueUrl: deadLetterQueueUrl,
          MessageBody: message.Body ?? '',
          MessageAttributes: attributes,
          ...(fifo
            ? {
                MessageGroupId: message.Attributes?.MessageGroupId ?? 'dead-letters',
                MessageDeduplicationId: fifoId(message.MessageId ?? facts.deadLetterId),
              }
            : {}),
        }),
        { abortSignal: signal },
      ),
    );
  try {
    await send(withFacts);
  } catch (error) {
    if ((error as { $fault?: string }).$fault !== 'client') throw error;
    await send(own);
  }
}
