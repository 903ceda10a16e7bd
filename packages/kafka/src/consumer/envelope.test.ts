import {
  DEAD_LETTER_HEADERS,
  deadLetterHeaders,
  type DeadLetterFacts,
} from '@justonce/core/transport';
import type { EnvelopeSettings } from './types';
import { toEnvelope } from './envelope';
import { decodeHeaders } from '../client/headers';
import { deadLetterRecord, defaultDeadLetterTopic } from './dead-letter';
import type { KafkaRecord } from '../client/types';

const record = (over: Partial<KafkaRecord> = {}): KafkaRecord => ({
  key: Buffer.from('order-7'),
  value: Buffer.from('{"n":1}'),
  offset: '42',
  timestamp: '1700000000000',
  headers: {},
  ...over,
});

const settings = (over: Partial<EnvelopeSettings['messageId']> = {}): EnvelopeSettings => ({
  messageId: { header: 'message-id', fallback: true, extract: undefined, ...over },
  scopeHeader: 'tenant',
  onExtractError: () => undefined,
});

describe('decodeHeaders', () => {
  it('decodes buffers as UTF-8, keeps the last of repeated values and drops absent ones', () => {
    expect(
      decodeHeaders({
        a: Buffer.from('é1'),
        b: 'plain',
        c: [Buffer.from('first'), 'second'],
        d: undefined,
      }),
    ).toEqual({ a: 'é1', b: 'plain', c: 'second' });
  });
});

describe('the message id of a record (core findMessageId, Kafka fallback)', () => {
  const idOf = (over: Partial<EnvelopeSettings['messageId']>, r = record(), onError = jest.fn()) =>
    toEnvelope(r, 'orders', 3, { ...settings(over), onExtractError: onError }).id;

  it('prefers the header over the extractor and the offset', () => {
    const extract = jest.fn(() => 'from-extractor');
    expect(idOf({ extract }, record({ headers: { 'message-id': 'm-1' } }))).toBe('m-1');
    expect(extract).not.toHaveBeenCalled();
  });

  it('gives the extractor the record with its topic and partition, when the header is empty', () => {
    const extract = jest.fn(() => 'x-9');
    const r = record({ headers: { 'message-id': '' } });
    expect(idOf({ extract }, r)).toBe('x-9');
    expect(extract).toHaveBeenCalledWith({ topic: 'orders', partition: 3, record: r });
  });

  it('falls back to topic/partition/offset, or to nothing when the fallback is off', () => {
    expect(idOf({})).toBe('orders/3/42');
    expect(idOf({ fallback: false })).toBeUndefined();
  });

  it('treats a throwing extractor as no id and reports the error with the position', () => {
    const onError = jest.fn();
    const boom = new Error('bad body');
    const extract = () => {
      throw boom;
    };
    expect(idOf({ extract }, record(), onError)).toBeUndefined();
    expect(onError).toHaveBeenCalledWith(boom, 'orders', 3, '42');
  });
});

describe('toEnvelope', () => {
  it('maps id, scope, key, headers, body and delivery facts', () => {
    const env = toEnvelope(
      record({ headers: { 'message-id': Buffer.from('m-1'), tenant: 'acme', traceparent: 'tp' } }),
      'orders',
      2,
      settings(),
    );
    expect(env).toMatchObject({
      id: 'm-1',
      scope: 'acme',
      key: 'order-7',
      headers: { 'message-id': 'm-1', tenant: 'acme', traceparent: 'tp' },
      delivery: { source: 'orders', partition: 2, offset: '42' },
    });
    expect(Buffer.from(env.body as Uint8Array).toString()).toBe('{"n":1}');
  });

  it('declares a first delivery only when told, and otherwise reports no first-delivery facts', () => {
    expect(toEnvelope(record(), 'orders', 0, settings(), true).delivery.redelivered).toBe(false);
    const counted = toEnvelope(record(), 'orders', 0, settings());
    expect('redelivered' in counted.delivery).toBe(false);
    expect(counted.delivery.receiveCount).toBeUndefined();
  });

  it('gives a tombstone an empty body and no key or scope when absent', () => {
    const env = toEnvelope(
      record({ key: null, value: null }),
      'orders',
      0,
      settings({ fallback: false }),
    );
    expect(env.id).toBeUndefined();
    expect(env.key).toBeUndefined();
    expect(env.scope).toBeUndefined();
    expect((env.body as Uint8Array).byteLength).toBe(0);
  });
});

describe('deadLetterRecord', () => {
  it("keeps key, value and headers and adds exactly core's dead-letter headers", () => {
    const at = new Date('2026-01-02T03:04:05.000Z');
    const facts: DeadLetterFacts = {
      reason: 'MAX_ATTEMPTS',
      errorCode: undefined,
      error: 'x'.repeat(1000),
      attempts: 5,
      messageId: 'm-1',
      scope: 'acme',
      consumer: 'billing',
      source: 'orders',
      deadLetterId: 'dl-1',
      at,
    };
    // An original header of a shared name is replaced; a `__proto__` one is kept as a header.
    const headers: Record<string, string> = { 'message-id': 'm-1', 'x-justonce-reason': 'forged' };
    Object.defineProperty(headers, '__proto__', { value: 'p', enumerable: true });
    const r = record({ headers });
    const out = deadLetterRecord({ topic: 'orders', partition: 1, record: r }, facts);
    expect(out.key?.toString()).toBe('order-7');
    expect(out.value?.toString()).toBe('{"n":1}');
    expect(Object.hasOwn(out.headers, '__proto__')).toBe(true);
    const { __proto__: _proto, ...rest } = out.headers;
    expect(rest).toEqual({
      'message-id': 'm-1',
      ...deadLetterHeaders(facts),
    });
    expect(out.headers[DEAD_LETTER_HEADERS.reason]).toBe('MAX_ATTEMPTS');
    expect(out.headers[DEAD_LETTER_HEADERS.at]).toBe(at.toISOString());
    expect(out.headers[DEAD_LETTER_HEADERS.errorCode]).toBeUndefined();
    expect(defaultDeadLetterTopic('orders')).toBe('orders.dlq');
  });
});
