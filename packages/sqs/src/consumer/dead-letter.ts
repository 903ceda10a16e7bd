import {
  SendMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  DEAD_LETTER_HEADERS,
  deadLetterHeaders,
  type DeadLetterFacts,
} from '@justonce/core/transport';
import { MAX_MESSAGE_ATTRIBUTES } from '../client/attributes';
import { fifoId } from '../publisher/entry';
import { timeLimited } from '../client/time-limits';

/**
 * The order in which the shared dead-letter facts claim the attribute slots SQS leaves
 * (10 per message, the message's own attributes first): what an operator needs to find the
 * letter in the store and know why it is there comes first; what the message itself
 * carries (its id, its scope) last. The store's dead letter has every fact either way.
 */
const SLOT_ORDER: ReadonlyArray<string> = [
  DEAD_LETTER_HEADERS.reason,
  DEAD_LETTER_HEADERS.deadLetterId,
  DEAD_LETTER_HEADERS.consumer,
  DEAD_LETTER_HEADERS.error,
  DEAD_LETTER_HEADERS.errorCode,
  DEAD_LETTER_HEADERS.attempts,
  DEAD_LETTER_HEADERS.source,
  DEAD_LETTER_HEADERS.at,
  DEAD_LETTER_HEADERS.messageId,
  DEAD_LETTER_HEADERS.scope,
];

/**
 * A character SQS refuses in an attribute value: anything outside the XML character range
 * (U+0000, most controls, lone surrogates, U+FFFE/U+FFFF). A message id can hold one (an
 * extractor found it), and it must not cost the copy every other fact.
 */
const REFUSED = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/**
 * The attributes of the forwarded copy: the message's own, unchanged (Binary ones
 * included), plus the facts as `String` attributes ({@link DEAD_LETTER_HEADERS} names), as
 * many as fit within SQS's 10 attributes. A fact never replaces an attribute the message
 * already has, and a fact SQS would refuse (see {@link REFUSED}) is left out: the store's
 * dead letter has it exactly. @internal
 */
export function deadLetterAttributes(
  message: Message,
  facts: DeadLetterFacts,
): Record<string, MessageAttributeValue> {
  const attributes: Record<string, MessageAttributeValue> = { ...message.MessageAttributes };
  const headers = deadLetterHeaders(facts);
  for (const name of SLOT_ORDER) {
    if (Object.keys(attributes).length >= MAX_MESSAGE_ATTRIBUTES) break;
    const value = headers[name];
    if (value === undefined || value === '' || REFUSED.test(value)) continue;
    if (!Object.hasOwn(attributes, name))
      attributes[name] = { DataType: 'String', StringValue: value };
  }
  return attributes;
}

/**
 * Sends `message` to the dead-letter queue with its body and attributes unchanged, plus the
 * facts ({@link deadLetterAttributes}). To a FIFO queue it goes in its original group, with
 * its SQS `MessageId` as deduplication id, so a resend after a crash is dropped by SQS. If
 * SQS refuses the message with the added attributes (e.g. it grew over the size limit), it
 * is sent once more with its own attributes only. Each send is limited to `requestMs`.
 * @internal
 */
export async function forwardToDeadLetterQueue(
  client: SQSClient,
  deadLetterQueueUrl: string,
  fifo: boolean,
  message: Message,
  facts: DeadLetterFacts,
  requestMs: number,
): Promise<void> {
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
    await send(deadLetterAttributes(message, facts));
  } catch (error) {
    // A client fault is about this request (its size, an attribute): once more without the
    // facts. Anything else (an outage) would fail the same way again.
    if ((error as { $fault?: string }).$fault !== 'client') throw error;
    await send({ ...message.MessageAttributes });
  }
}
