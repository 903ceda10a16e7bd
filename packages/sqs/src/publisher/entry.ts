import { createHash } from 'node:crypto';
import type { MessageAttributeValue, SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import type { JustonceError, OutgoingMessage } from '@justonce/core';
import {
  MAX_MESSAGE_ATTRIBUTES,
  attributeBytes,
  attributeNameProblem,
  toMessageAttributes,
} from '../attributes';
import { BODY_ENCODING_ATTRIBUTE, encodeBody, type BodyEncoding } from '../body';
import { SqsInvalidMessageError } from '../errors/invalid-message-error';
import { SqsMessageTooLargeError } from '../errors/message-too-large-error';
import { SqsTooManyAttributesError } from '../errors/too-many-attributes-error';

/** The attribute every published message carries its id in. */
export const MESSAGE_ID_ATTRIBUTE = 'message-id';

/** FIFO group and deduplication ids: 1–128 characters of ASCII letters, digits and punctuation. */
const FIFO_ID = /^[\x21-\x7E]{1,128}$/;

/** A FIFO id for `value`: itself when SQS accepts it, else its SHA-256 in hex. @internal */
export function fifoId(value: string): string {
  return FIFO_ID.test(value) ? value : createHash('sha256').update(value).digest('hex');
}

/** One message ready for a `SendMessageBatch` request (without its batch `Id`). @internal */
export interface PreparedEntry {
  readonly index: number;
  readonly message: OutgoingMessage;
  readonly entry: Omit<SendMessageBatchRequestEntry, 'Id'>;
  /** Bytes SQS counts for it. */
  readonly bytes: number;
}

/** Settings for {@link prepareEntry}. @internal */
export interface EntrySettings {
  readonly fifo: boolean;
  readonly maxMessageBytes: number;
  readonly bodyEncoding: BodyEncoding;
}

/**
 * Turns one outgoing message into a batch entry: headers (and `message-id`) as String
 * attributes, the body encoded, FIFO group = key (the message id when there is no key) and
 * deduplication id = message id. Everything SQS would refuse comes back as a typed,
 * non-retriable error instead. @internal
 */
export function prepareEntry(
  message: OutgoingMessage,
  index: number,
  settings: EntrySettings,
): PreparedEntry | JustonceError {
  const { messageId, destination } = message;
  const headers: Record<string, string> = { ...message.headers, [MESSAGE_ID_ATTRIBUTE]: messageId };
  if (settings.bodyEncoding === 'base64') headers[BODY_ENCODING_ATTRIBUTE] = 'base64';
  const names = Object.keys(headers);
  if (names.length > MAX_MESSAGE_ATTRIBUTES) {
    return new SqsTooManyAttributesError({
      messageId,
      attributes: names,
      limit: MAX_MESSAGE_ATTRIBUTES,
    });
  }
  for (const [name, value] of Object.entries(headers)) {
    const problem = attributeNameProblem(name);
    if (problem !== undefined) {
      return new SqsInvalidMessageError(`attribute name "${name}" ${problem}`, {
        messageId,
        attribute: name,
      });
    }
    if (typeof value !== 'string' || value === '') {
      return new SqsInvalidMessageError(`attribute "${name}" has no value; SQS needs one`, {
        messageId,
        attribute: name,
      });
    }
  }
  const body = encodeBody(message.payload, settings.bodyEncoding);
  if (!body.ok) return new SqsInvalidMessageError(body.problem, { messageId, destination });

  const attributes: Record<string, MessageAttributeValue> = toMessageAttributes(headers);
  let bytes = Buffer.byteLength(body.body);
  for (const [name, value] of Object.entries(attributes)) bytes += attributeBytes(name, value);
  if (bytes > settings.maxMessageBytes) {
    return new SqsMessageTooLargeError({
      messageId,
      destination,
      bytes,
      limit: settings.maxMessageBytes,
    });
  }
  const entry: Omit<SendMessageBatchRequestEntry, 'Id'> = {
    MessageBody: body.body,
    MessageAttributes: attributes,
    ...(settings.fifo
      ? {
          MessageGroupId: fifoId(message.key ?? messageId),
          MessageDeduplicationId: fifoId(messageId),
        }
      : {}),
  };
  return { index, message, entry, bytes };
}
