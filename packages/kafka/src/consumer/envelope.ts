import { findMessageId, type Envelope } from '@justonce/core/transport';
import type { KafkaRecord } from '../client/types';
import type { EnvelopeSettings, KafkaDelivery } from './types';
import { decodeHeaders, headerOf } from '../client/headers';

const EMPTY = new Uint8Array(0);

/**
 * Maps one consumed record to the inbox's envelope: id by the message-id rules, scope
 * from the tenant header, key and headers as text, the value as raw bytes (a tombstone's
 * null value becomes an empty body), and the record's topic, partition and offset as
 * delivery facts (and as its `position`, which a dead letter keeps). `firstDelivery` adds `redelivered: false`, which lets the inbox skip its
 * attempt-counting write; it is set only by the rule in `batch/first-delivery.ts`. Any other
 * record carries no first-delivery facts at all, so the inbox counts it from 1.
 *
 * Never throws, whatever the record holds: input the inbox cannot take (no id, an id,
 * tenant or header with U+0000 or invalid UTF-8) still becomes an envelope, which the inbox
 * then dead-letters with the reason. A throw would fail the record's whole chunk on every
 * delivery. Header values keep invalid UTF-8 one-to-one (see `client/text.ts`); the key, which
 * identifies nothing to the inbox, is decoded as plain UTF-8 (invalid bytes become U+FFFD).
 */
export function toEnvelope(
  record: KafkaRecord,
  topic: string,
  partition: number,
  settings: EnvelopeSettings,
  firstDelivery = false,
): Envelope {
  const headers = decodeHeaders(record.headers);
  const id = findMessageId<KafkaDelivery>(
    { topic, partition, record },
    headers,
    settings.messageId,
    () => `${topic}/${partition}/${String(record.offset)}`,
    (error) => settings.onExtractError(error, topic, partition, record.offset),
  );
  const scope = headerOf(headers, settings.scopeHeader);
  const key = keyText(record.key);
  return {
    id,
    ...(scope !== undefined && scope !== '' ? { scope } : {}),
    ...(key !== undefined ? { key } : {}),
    headers,
    body: record.value ?? EMPTY,
    delivery: {
      source: topic,
      partition,
      offset: record.offset,
      receivedAt: new Date(),
      position: { topic, partition, offset: record.offset },
      ...(firstDelivery ? { redelivered: false } : {}),
    },
  };
}

/** The key as text; `undefined` when the record has none. */
function keyText(key: unknown): string | undefined {
  if (key === null || key === undefined) return undefined;
  if (typeof key === 'string') return key;
  if (key instanceof Uint8Array) {
    return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('utf8');
  }
  return undefined;
}
