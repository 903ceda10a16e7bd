import { findMessageId, type Envelope, type ResolvedMessageId } from '@justonce/core/transport';
import type { ConsumeMessage } from 'amqplib';
import { headerCount, headerKey, headersToStrings } from '../client/headers';

/**
 * The header a consumer sets on the copy it sends to a retry queue: the number of the
 * attempt that failed. @internal
 */
export const RETRY_ATTEMPT_HEADER = 'x-justonce-retry-attempt';

/** The header the relay's publisher writes the outbox partition key to. */
export const PARTITION_KEY_HEADER = 'partition-key';

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
 * The message id by core's one rule ({@link findMessageId}): the `messageId.header` header
 * (default `message-id`, any case), then `messageId.extract`, then, with
 * `messageId.fallback`, the AMQP `message-id` property. A header of bytes that are not UTF-8
 * is passed on as the bytes, which the inbox refuses (`INVALID_MESSAGE_ID`). @internal
 */
export function messageIdOf(
  message: ConsumeMessage,
  options: ResolvedMessageId<ConsumeMessage>,
  onExtractError: (error: unknown) => void,
): string | undefined {
  const raw: unknown = message.properties.headers;
  const wanted = options.header.toLowerCase();
  // Only the id header, read as {@link keyHeader} reads it (bytes kept), under each name
  // that matches it without case: core picks among them the way it does for every transport.
  const headers: Record<string, string> = {};
  if (typeof raw === 'object' && raw !== null) {
    for (const name of Object.keys(raw)) {
      if (name.toLowerCase() !== wanted) continue;
      const value = keyHeader(raw, name);
      if (value !== undefined) headers[name] = value;
    }
  }
  return findMessageId(
    message,
    headers,
    options,
    () => message.properties.messageId as unknown,
    onExtractError,
  );
}

/**
 * Maps one AMQP delivery to the inbox's {@link Envelope}. The message id comes from
 * {@link messageIdOf}; the scope from the `scopeHeader` header (bytes that are not UTF-8
 * are passed on as the bytes, which the inbox refuses); `x-delivery-count` (quorum queues)
 * becomes `receiveCount`; the `redelivered` flag and the queue travel as delivery facts,
 * and the queue, exchange and routing key as its `position`, which a dead letter keeps (the
 * delivery tag is left out: it means nothing once the channel is gone).
 * @internal
 */
export function toEnvelope(
  message: ConsumeMessage,
  queue: string,
  id: string | undefined,
  scopeHeader: string,
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
  const scope = keyHeader(message.properties.headers, scopeHeader);
  const { exchange, routingKey } = message.fields as { exchange?: unknown; routingKey?: unknown };
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
      position: {
        queue,
        ...(typeof exchange === 'string' ? { exchange } : {}),
        ...(typeof routingKey === 'string' ? { routingKey } : {}),
      },
      // x-delivery-count counts earlier deliveries: 0 (or absent) on the first one.
      ...(deliveryCount !== undefined ? { receiveCount: deliveryCount + 1 } : {}),
    },
  };
}
