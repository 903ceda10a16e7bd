import type { ConsumeMessage, Options } from 'amqplib';
import { encodableHeaders } from '../client/headers';

/** Broker-set headers that must not be copied onto a republished message. */
const BROKER_HEADERS = /^(x-death|x-first-death-.*|x-last-death-.*|x-delivery-count)$/;

/** Properties for a copy of `message` (retry or dead letter), with extra headers. @internal */
export function republished(
  message: ConsumeMessage,
  extraHeaders: Record<string, string | number>,
): Options.Publish {
  const p = message.properties;
  // Only what amqplib can encode again: a header it cannot would fail this publish on every
  // delivery, and the message would be requeued forever.
  const headers = encodableHeaders(p.headers);
  for (const name of Object.keys(headers)) {
    if (BROKER_HEADERS.test(name)) delete headers[name];
  }
  Object.assign(headers, extraHeaders);
  const out: Options.Publish = { headers, deliveryMode: p.deliveryMode ?? 2 };
  const copy = [
    'contentType',
    'contentEncoding',
    'priority',
    'correlationId',
    'replyTo',
    'messageId',
    'timestamp',
    'type',
    'appId',
  ] as const;
  for (const key of copy) {
    const value: unknown = p[key];
    if (value !== undefined && value !== null) (out as Record<string, unknown>)[key] = value;
  }
  return out;
}
