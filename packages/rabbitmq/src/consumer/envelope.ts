import { MESSAGE_ID_HEADER, type Envelope } from '@justonce/core';
import type { ConsumeMessage } from 'amqplib';
import { headerCount, headerKey, headersToStrings } from '../amqp/headers';

/**
 * Finds a message id when neither `properties.messageId` nor a `message-id` header carries
 * one. Return `undefined` when there is none: the inbox then dead-letters the message with
 * reason `MISSING_MESSAGE_ID`. A throw counts as "no id".
 */
export type MessageIdExtractor = (message: ConsumeMessage) => string | undefined;

/** Finds the scope (tenant) of a message; `undefined` means the inbox's default scope. */
export type ScopeExtractor = (message: ConsumeMessage) => string | undefined;

/**
 * The header a consumer sets on the copy it sends to a retry queue: the number of the
 * attempt that failed. @internal
 */
export const RETRY_ATTEMPT_HEADER = 'x-justonce-retry-attempt';

/** The header the relay's publisher writes the outbox partition key to. */
export const PARTITION_KEY_HEADER = 'partition-key';

/** Where a message id was found, for logs. @internal */
export type IdSource = 'property' | 'header' | 'extractor' | 'none';

/**
 * A header's bytes that are not valid UTF-8, handed on as the id or scope unchanged: the
 * inbox dead-letters a value that is not a string (`INVALID_MESSAGE_ID`, `INVALID_SCOPE`),
 * where decoded text would dedupe different messages as one.
 */
function undecodable(bytes: Buffer): string {
  return bytes as unknown as string;
}

/** {@link headerKey} as the `string` an envelope field is typed as. */
function keyHeader(headers: unknown, name: string): string | undefined {
  const value = headerKey(headers, name);
  return Buffer.isBuffer(value) ? undecodable(value) : value;
}

/**
 * The message id: `properties.messageId`, else the `message-id` header, else the
 * extractor's answer. A `message-id` header of bytes that are not UTF-8 is passed on as
 * the bytes, which the inbox refuses. @internal
 */
export function findMessageId(
  message: ConsumeMessage,
  extractor: MessageIdExtractor | undefined,
): { id: string | undefined; source: IdSource; extractorError?: unknown } {
  const property: unknown = message.properties.messageId;
  if (typeof property === 'string' && property !== '') return { id: property, source: 'property' };
  const header = keyHeader(message.properties.headers, MESSAGE_ID_HEADER);
  if (header !== undefined) return { id: header, source: 'header' };
  if (extractor === undefined) return { id: undefined, source: 'none' };
  try {
    const id = extractor(message);
    if (typeof id === 'string' && id !== '') return { id, source: 'extractor' };
    return { id: undefined, source: 'none' };
  } catch (error) {
    return { id: undefined, source: 'none', extractorError: error };
  }
}

/**
 * Maps one AMQP delivery to the inbox's {@link Envelope}. The message id comes from
 * {@link findMessageId}; `x-delivery-count` (quorum queues) becomes `receiveCount`; the
 * `redelivered` flag and the queue travel as delivery facts. @internal
 */
export function toEnvelope(
  message: ConsumeMessage,
  queue: string,
  id: string | undefined,
  scopeExtractor: ScopeExtractor,
): Envelope {
  const headers = headersToStrings(message.properties.headers);
  const correlationId: unknown = message.properties.correlationId;
  if (typeof correlationId === 'string' && correlationId !== '' && !headers['correlation-id']) {
    headers['correlation-id'] = correlationId;
  }
  const deliveryCount = headerCount(message.properties.headers, 'x-delivery-count');
  // A copy that came back from a retry queue arrives with `redelivered: false`, yet it is a
  // later attempt of the same message: say so, or the inbox would take it for a first one.
  const retriedAttempt = headerCount(message.properties.headers, RETRY_ATTEMPT_HEADER);
  let scope: string | undefined;
  try {
    scope = scopeExtractor(message);
  } catch {
    scope = undefined;
  }
  return {
    id,
    ...(scope !== undefined && scope !== '' ? { scope } : {}),
    ...(headers[PARTITION_KEY_HEADER] ? { key: headers[PARTITION_KEY_HEADER] } : {}),
    headers,
    body: message.content,
    delivery: {
      redelivered: message.fields.redelivered === true || retriedAttempt !== undefined,
      ...(retriedAttempt !== undefined ? { attempt: retriedAttempt + 1 } : {}),
      source: queue,
      receivedAt: new Date(),
      // x-delivery-count counts earlier deliveries: 0 (or absent) on the first one.
      ...(deliveryCount !== undefined ? { receiveCount: deliveryCount + 1 } : {}),
    },
  };
}

/**
 * The default scope extractor: the `tenant` header the outbox writes (bytes that are not
 * UTF-8 are passed on as the bytes, which the inbox refuses). @internal
 */
export const tenantHeaderScope: ScopeExtractor = (message) =>
  keyHeader(message.properties.headers, 'tenant');
