import type { Envelope } from '@justonce/core';
import type { KafkaRecord } from './client';
import { decodeHeaders } from './headers';
import { resolveMessageId, type MessageIdOptions } from './message-id';

/** Settings that shape how a record becomes an {@link Envelope}. */
export interface EnvelopeSettings {
  readonly messageId: Required<Pick<MessageIdOptions, 'header' | 'fallbackToOffset'>> &
    Pick<MessageIdOptions, 'extract'>;
  readonly scopeHeader: string;
  readonly onExtractError: (
    error: unknown,
    topic: string,
    partition: number,
    offset: string,
  ) => void;
}

const EMPTY = new Uint8Array(0);

/**
 * Maps one consumed record to the inbox's envelope: id by the message-id rules, scope
 * from the tenant header, key and headers as UTF-8 strings, the value as raw bytes (a
 * tombstone's null value becomes an empty body), and the record's topic, partition and
 * offset as delivery facts. `firstDelivery` adds `redelivered: false`, which lets the inbox
 * skip its attempt-counting write; it is set only by the rule in `first-delivery.ts`. Any
 * other record carries no first-delivery facts at all, so the inbox counts it from 1.
 */
export function toEnvelope(
  record: KafkaRecord,
  topic: string,
  partition: number,
  settings: EnvelopeSettings,
  firstDelivery = false,
): Envelope {
  const headers = decodeHeaders(record.headers);
  const id = resolveMessageId(record, headers, topic, partition, settings.messageId, (error) =>
    settings.onExtractError(error, topic, partition, record.offset),
  );
  const scope = headers[settings.scopeHeader];
  return {
    id,
    ...(scope !== undefined && scope !== '' ? { scope } : {}),
    ...(record.key !== null ? { key: record.key.toString('utf8') } : {}),
    headers,
    body: record.value ?? EMPTY,
    delivery: {
      source: topic,
      partition,
      offset: record.offset,
      receivedAt: new Date(),
      ...(firstDelivery ? { redelivered: false } : {}),
    },
  };
}
