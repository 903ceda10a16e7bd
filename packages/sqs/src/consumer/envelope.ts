import type { Message } from '@aws-sdk/client-sqs';
import { findMessageId, type Envelope, type ResolvedMessageId } from '@justonce/core/transport';
import { fromMessageAttributes, headerOf } from '../client/attributes';
import { decodeBody } from '../client/body';

/** Settings that shape how a received message becomes an {@link Envelope}. */
export interface EnvelopeSettings {
  /** The queue the message came from (the envelope's `delivery.source`). */
  readonly queueUrl: string;
  /** Where the id comes from (core's message-id rules: attribute, `extract`, SQS `MessageId`). */
  readonly messageId: ResolvedMessageId<Message>;
  /** Message attribute holding the scope (tenant). */
  readonly scopeHeader: string;
  readonly onExtractError: (error: unknown, message: Message) => void;
}

/** A receive count: only the decimal digits SQS sends, as a safe positive integer. */
function positive(value: unknown): number | undefined {
  if (typeof value !== 'string' || !/^[1-9][0-9]*$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** `Attributes[name]` of a message, whatever shape `Attributes` has. */
function systemAttribute(message: Message, name: string): unknown {
  const attributes: unknown = message.Attributes;
  if (typeof attributes !== 'object' || attributes === null) return undefined;
  return Object.hasOwn(attributes, name)
    ? (attributes as Record<string, unknown>)[name]
    : undefined;
}

/**
 * Maps one received SQS message to the inbox's envelope: id by core's message-id rules (the
 * broker's identity is the SQS `MessageId`), scope from the scope attribute, key from the FIFO `MessageGroupId`, string attributes as
 * headers, the body as text (bytes when it carries `body-encoding: base64`), and the
 * `ApproximateReceiveCount` as the delivery's receive count; its queue and SQS `MessageId`
 * as its `position`, which a dead letter keeps.
 */
export function toEnvelope(message: Message, settings: EnvelopeSettings): Envelope {
  const headers = fromMessageAttributes(message.MessageAttributes);
  const id = findMessageId(
    message,
    headers,
    settings.messageId,
    (): unknown => message.MessageId,
    (error) => settings.onExtractError(error, message),
  );
  const scope = headerOf(headers, settings.scopeHeader);
  const group = systemAttribute(message, 'MessageGroupId');
  const receiveCount = positive(systemAttribute(message, 'ApproximateReceiveCount'));
  return {
    id,
    ...(scope !== undefined && scope !== '' ? { scope } : {}),
    ...(typeof group === 'string' ? { key: group } : {}),
    headers,
    body: decodeBody(message.Body ?? '', headers),
    delivery: {
      source: settings.queueUrl,
      ...(receiveCount !== undefined ? { receiveCount } : {}),
      receivedAt: new Date(),
      position: {
        queue: settings.queueUrl,
        ...(typeof message.MessageId === 'string' ? { brokerMessageId: message.MessageId } : {}),
      },
    },
  };
}
