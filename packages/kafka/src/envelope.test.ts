import { toEnvelope, type EnvelopeSettings } from './envelope';
import { decodeHeaders } from './headers';
import { resolveMessageId } from './message-id';
import { deadLetterRecord, defaultDeadLetterTopic } from './dead-letter';
import type { KafkaRecord } from './client';

const record = (over: Partial<KafkaRecord> = {}): KafkaRecord => ({
  key: Buffer.from('order-7'),
  value: Buffer.from('{"n":1}'),
  offset: '42',
  timestamp: '1700000000000',
  headers: {},
  ...over,
});

const settings = (over: Partial<EnvelopeSettings['messageId']> = {}): EnvelopeSettings => ({
  messageId: { header: 'message-id', fallbackToOffset: true, ...over },
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

describe('resolveMessageId', () => {
  const rules = { header: 'message-id', fallbackToOffset: true };
  it('prefers the header over the extractor and the offset', () => {
    const extract = jest.fn(() => 'from-extractor');
    expect(
      resolveMessageId(record(), { 'message-id': 'm-1' }, 't', 0, { ...rules, extract }, jest.fn()),
    ).toBe('m-1');
    expect(extract).not.toHaveBeenCalled();
  });

  it('uses the extractor when the header is absent or empty', () => {
    expect(
      resolveMessageId(
        record(),
        { 'message-id': '' },
        't',
        0,
        { ...rules, extract: () => 'x-9' },
        jest.fn(),
      ),
    ).toBe('x-9');
  });

  it('falls back to topic/partition/offset, or to nothing when the fallback is off', () => {
    expect(resolveMessageId(record(), {}, 'orders', 3, rules, jest.fn())).toBe('orders/3/42');
    expect(
      resolveMessageId(record(), {}, 'orders', 3, { ...rules, fallbackToOffset: false }, jest.fn()),
    ).toBeUndefined();
  });

  it('treats a throwing extractor as no id and reports the error', () => {
    const onError = jest.fn();
    const boom = new Error('bad body');
    const id = resolveMessageId(
      record(),
      {},
      'orders',
      0,
      {
        ...rules,
        extract: () => {
          throw boom;
        },
      },
      onError,
    );
    expect(id).toBeUndefined();
    expect(onError).toHaveBeenCalledWith(boom);
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
      settings({ fallbackToOffset: false }),
    );
    expect(env.id).toBeUndefined();
    expect(env.key).toBeUndefined();
    expect(env.scope).toBeUndefined();
    expect((env.body as Uint8Array).byteLength).toBe(0);
  });
});

describe('deadLetterRecord', () => {
  it('keeps key, value and headers and adds the reason and origin', () => {
    const out = deadLetterRecord(record({ headers: { 'message-id': 'm-1' } }), 'orders', 1, {
      reason: 'MAX_ATTEMPTS',
      error: new Error('x'.repeat(5000)),
      attempt: 5,
      deadLetterId: 'dl-1',
      consumer: 'billing',
    });
    expect(out.key?.toString()).toBe('order-7');
    expect(out.value?.toString()).toBe('{"n":1}');
    expect(out.headers).toMatchObject({
      'message-id': 'm-1',
      'x-dead-letter-reason': 'MAX_ATTEMPTS',
      'x-original-topic': 'orders',
      'x-original-partition': '1',
      'x-original-offset': '42',
      'x-dead-letter-consumer': 'billing',
      'x-dead-letter-attempts': '5',
      'x-dead-letter-id': 'dl-1',
    });
    expect(String(out.headers['x-dead-letter-error']).length).toBe(1000);
    expect(defaultDeadLetterTopic('orders')).toBe('orders.dlq');
  });
});
