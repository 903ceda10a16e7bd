import type { ConsumeMessage } from 'amqplib';
import { resolveMessageIdOptions } from '@justonce/core/transport';
import { messageIdOf, toEnvelope } from './envelope';

function message(
  properties: Partial<ConsumeMessage['properties']> = {},
  redelivered = false,
): ConsumeMessage {
  return {
    content: Buffer.from('{"a":1}'),
    fields: {
      deliveryTag: 1,
      redelivered,
      exchange: '',
      routingKey: 'q',
      consumerTag: 'c',
    },
    properties: {
      contentType: undefined,
      contentEncoding: undefined,
      headers: {},
      deliveryMode: 2,
      priority: undefined,
      correlationId: undefined,
      replyTo: undefined,
      expiration: undefined,
      messageId: undefined,
      timestamp: undefined,
      type: undefined,
      userId: undefined,
      appId: undefined,
      clusterId: undefined,
      ...properties,
    },
  };
}

describe('messageIdOf (core findMessageId over an AMQP delivery)', () => {
  const extract = () => 'from-extract';
  const withExtract = resolveMessageIdOptions<ConsumeMessage>({ extract });
  const defaults = resolveMessageIdOptions<ConsumeMessage>(undefined);
  const none = () => undefined;

  it('prefers the message-id header (any case), then extract, then the message-id property', () => {
    expect(
      messageIdOf(message({ messageId: 'p', headers: { 'message-id': 'h' } }), withExtract, none),
    ).toBe('h');
    expect(messageIdOf(message({ headers: { 'Message-Id': 'h' } }), withExtract, none)).toBe('h');
    expect(
      messageIdOf(message({ headers: { 'message-id': Buffer.from('b') } }), defaults, none),
    ).toBe('b');
    expect(messageIdOf(message({ messageId: 'p' }), withExtract, none)).toBe('from-extract');
    expect(messageIdOf(message({ messageId: 'p' }), defaults, none)).toBe('p');
  });

  it('reads another header when told to, and ignores the property without fallback', () => {
    const custom = resolveMessageIdOptions<ConsumeMessage>({ header: 'x-id', fallback: false });
    expect(
      messageIdOf(
        message({ messageId: 'p', headers: { 'x-id': 'x', 'message-id': 'h' } }),
        custom,
        none,
      ),
    ).toBe('x');
    expect(messageIdOf(message({ messageId: 'p' }), custom, none)).toBeUndefined();
  });

  it('reports no id when none is found, and a throwing extract as no id, reported', () => {
    expect(messageIdOf(message({ messageId: '' }), defaults, none)).toBeUndefined();
    const nothing = resolveMessageIdOptions<ConsumeMessage>({ extract: () => undefined });
    expect(messageIdOf(message(), nothing, none)).toBeUndefined();
    const boom = new Error('bad');
    const reported: unknown[] = [];
    const throwing = resolveMessageIdOptions<ConsumeMessage>({
      extract: () => {
        throw boom;
      },
    });
    expect(messageIdOf(message({ messageId: 'p' }), throwing, (e) => reported.push(e))).toBe(
      undefined,
    );
    expect(reported).toEqual([boom]);
  });
});

describe('toEnvelope', () => {
  it('maps headers, scope, key and delivery facts', () => {
    const msg = message(
      {
        correlationId: 'corr-1',
        headers: {
          tenant: 'acme',
          'partition-key': 'k1',
          'x-delivery-count': 2,
          attempt: 3,
          flag: true,
          nested: { a: [1, 2] },
          absent: undefined,
        },
      },
      true,
    );
    const envelope = toEnvelope(msg, 'orders', 'id-1', 'tenant');
    expect(envelope).toMatchObject({
      id: 'id-1',
      scope: 'acme',
      key: 'k1',
      headers: {
        tenant: 'acme',
        'partition-key': 'k1',
        'x-delivery-count': '2',
        attempt: '3',
        flag: 'true',
        nested: '{"a":[1,2]}',
        'correlation-id': 'corr-1',
      },
      delivery: { redelivered: true, source: 'orders', receiveCount: 3 },
    });
    expect(envelope.headers).not.toHaveProperty('absent');
    expect(Buffer.from(envelope.body as Uint8Array).toString()).toBe('{"a":1}');
  });

  it('marks a copy back from a retry queue as a redelivery with its attempt number', () => {
    const envelope = toEnvelope(
      message({ messageId: 'm', headers: { 'x-justonce-retry-attempt': 2 } }),
      'q',
      'm',
      'tenant',
    );
    expect(envelope.delivery).toMatchObject({ redelivered: true, attempt: 3 });
  });

  it('reads the scope from the scopeHeader given', () => {
    const msg = message({ headers: { tenant: 'acme', 'x-org': 'org-7' } });
    expect(toEnvelope(msg, 'q', 'm', 'x-org').scope).toBe('org-7');
  });

  it('leaves scope, key and receive count out when absent', () => {
    const envelope = toEnvelope(message({ headers: { tenant: '' } }), 'q', undefined, 'tenant');
    expect(envelope.id).toBeUndefined();
    expect(envelope).not.toHaveProperty('scope');
    expect(envelope).not.toHaveProperty('key');
    expect(envelope.delivery).not.toHaveProperty('receiveCount');
    expect(envelope.delivery.redelivered).toBe(false);
  });
});
