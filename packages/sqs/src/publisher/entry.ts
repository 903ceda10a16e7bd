import { createHash } from 'node:crypto';
import type { MessageAttributeValue, SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import type { JustonceError } from '@justonce/core';
import { MESSAGE_ID_HEADER, messageHeaders, type OutgoingMessage } from '@justonce/core/transport';
import { MAX_MESSAGE_ATTRIBUTES, attributeNameProblem } from '../client/attributes';
import { BODY_ENCODING_ATTRIBUTE, encodeBody, type BodyEncoding } from '../client/body';
import { SqsInvalidMessageError } from '../errors/invalid-message-error';
import { SqsMessageTooLargeError } from '../errors/message-too-large-error';
import { SqsTooManyAttributesError } from '../errors/too-many-attributes-error';
import { MAX_BATCH_ENTRIES } from './plan';
import type { PreparedEntry } from './prepared-entry';

/** The attribute every published message carries its id in. */
export const MESSAGE_ID_ATTRIBUTE = MESSAGE_ID_HEADER;

/** Bytes SQS counts for the data type of a String attribute. */
const STRING_TYPE_BYTES = Buffer.byteLength('String');

/**
 * Attribute names already found valid, with their UTF-8 length. Headers repeat the same few
 * names on every message, so each is checked once; the cache is bounded (cleared when full)
 * so that names made up per message cannot grow it without end.
 */
const checkedNames = new Map<string, number>();
const CHECKED_NAMES_LIMIT = 1_000;

function rememberName(name: string, nameBytes: number): void {
  if (checkedNames.size >= CHECKED_NAMES_LIMIT) checkedNames.clear();
  checkedNames.set(name, nameBytes);
}

/** FIFO group and deduplication ids: 1–128 characters of ASCII letters, digits and punctuation. */
const FIFO_ID = /^[\x21-\x7E]{1,128}$/;

/** A FIFO id for `value`: itself when SQS accepts it, else its SHA-256 in hex. @internal */
export function fifoId(value: string): string {
  return FIFO_ID.test(value) ? value : createHash('sha256').update(value).digest('hex');
}

/** Settings for {@link prepareEntry}. @internal */
export interface EntrySettings {
  readonly fifo: boolean;
  readonly maxMessageBytes: number;
  readonly bodyEncoding: BodyEncoding;
}

/** Batch entry `Id`s by position in a request: every request uses the same ten. */
const ENTRY_IDS: readonly string[] = Array.from({ length: MAX_BATCH_ENTRIES }, (_, i) => `e${i}`);

/**
 * `prepared`'s entry with the `Id` of position `position` in its request. Built field by
 * field: a spread of the entry into a new object, with an id map per request, made the
 * publisher's requests allocate over twice as much.
 * @internal
 */
export function requestEntry(
  prepared: PreparedEntry,
  position: number,
): SendMessageBatchRequestEntry {
  const { MessageBody, MessageAttributes, MessageGroupId, MessageDeduplicationId } = prepared.entry;
  const Id = ENTRY_IDS[position]!;
  return MessageGroupId === undefined
    ? { Id, MessageBody, MessageAttributes }
    : { Id, MessageBody, MessageAttributes, MessageGroupId, MessageDeduplicationId };
}

/** The entry of a request (`entries`, in request order) that SQS's result `id` names. @internal */
export function entryOf(
  entries: readonly PreparedEntry[],
  id: string | undefined,
): PreparedEntry | undefined {
  return id === undefined ? undefined : entries[ENTRY_IDS.indexOf(id)];
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
  const headers = messageHeaders(message);
  if (settings.bodyEncoding === 'base64') headers[BODY_ENCODING_ATTRIBUTE] = 'base64';
  const names = Object.keys(headers);
  if (names.length > MAX_MESSAGE_ATTRIBUTES) {
    return new SqsTooManyAttributesError({
      messageId,
      attributes: names,
      limit: MAX_MESSAGE_ATTRIBUTES,
    });
  }
  // One pass: check each attribute, build it and count the bytes SQS counts for it.
  const attributes: Record<string, MessageAttributeValue> = {};
  let bytes = 0;
  for (const name of names) {
    const value = headers[name];
    let nameBytes = checkedNames.get(name);
    if (nameBytes === undefined) {
      const problem = attributeNameProblem(name);
      if (problem !== undefined) {
        return new SqsInvalidMessageError(`attribute name "${name}" ${problem}`, {
          messageId,
          attribute: name,
        });
      }
      nameBytes = Buffer.byteLength(name);
      rememberName(name, nameBytes);
    }
    if (typeof value !== 'string' || value === '') {
      return new SqsInvalidMessageError(`attribute "${name}" has no value; SQS needs one`, {
        messageId,
        attribute: name,
      });
    }
    attributes[name] = { DataType: 'String', StringValue: value };
    bytes += nameBytes + STRING_TYPE_BYTES + Buffer.byteLength(value);
  }
  const body = encodeBody(message.payload, settings.bodyEncoding);
  if (!body.ok) return new SqsInvalidMessageError(body.problem, { messageId, destination });

  bytes += Buffer.byteLength(body.body);
  if (bytes > settings.maxMessageBytes) {
    return new SqsMessageTooLargeError({
      messageId,
      destination,
      bytes,
      limit: settings.maxMessageBytes,
    });
  }
  const entry: Omit<SendMessageBatchRequestEntry, 'Id'> = settings.fifo
    ? {
        MessageBody: body.body,
        MessageAttributes: attributes,
        MessageGroupId: fifoId(message.key ?? messageId),
        MessageDeduplicationId: fifoId(messageId),
      }
    : { MessageBody: body.body, MessageAttributes: attributes };
  return { index, message, entry, bytes };
}
