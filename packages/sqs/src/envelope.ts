import type { Message } from '@aws-sdk/client-sqs';
import type { Envelope } from '@justonce/core';
import { fromMessageAttributes } from './attributes';
import { decodeBody } from './body';
import { resolveMessageId, type ResolvedMessageIdOptions } from './message-id';

/** Settings that shape how a received message becomes an {@link Envelope}. */
export interface EnvelopeSettings {
  /** The queue the message came from (the envelope's `delivery.source`). */
  readonly queueUrl: string;
  readonly messageId: ResolvedMessageIdOptions;
  /** Attribute holding the scope (tenant). */
  readonly scopeAttribute: string;
  readonly onExtractError: (error: unknown, message: Message) => void;
}

function positive(value: string | undefined): number | undefined {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * Maps one received SQS message to the inbox's envelope: id by the message-id rules, scope
 * from the scope attribute, key from the FIFO `MessageGroupId`, string attributes as
 * headers, the body as text (bytes when it carries `body-encoding: base64`), and the
 * `ApproximateReceiveCount` as the delivery's receive count.
 */
export function toEnvelope(message: Message, settings: EnvelopeSettings): Envelope {
  const headers = fromMessageAttributes(message.MessageAttributes);
  const id = resolveMessageId(message, headers, settings.messageId, (error) =>
    settings.onExtractError(error, message),
  );
  const scope = headers[settings.scopeAttribute];
  const group = message.Attributes?.MessageGroupId;
  const receiveCount = positive(message.Attributes?.ApproximateReceiveCount);
  return {
    id,
    ...(scope !== undefined && scope !== '' ? { scope } : {}),
    ...(group !== undefined ? { key: group } : {}),
    headers,
    body: decodeBody(message.Body ?? '', headers),
    delivery: {
      source: settings.queueUrl,
      ...(receiveCount !== undefined ? { receiveCount } : {}),
      receivedAt: new Date(),
    },
  };
}
