import type { ConsumeMessage } from 'amqplib';
import { findMessageId, tenantHeaderScope, toEnvelope } from './envelope';

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

describe('findMessageId', () => {
  it('prefers properties.messageId, then the message-id header, then the extractor', () => {
    const extractor = () => 'from-extractor';
    expect(
      findMessageId(message({ messageId: 'p', headers: { 'message-id': 'h' } }), extractor),
    ).toEqual({ id: 'p', source: 'property' });
    expect(findMessageId(message({ headers: { 'message-id': 'h' } }), extractor)).toEqual({
      id: 'h',
      source: 'header',
    });
    expect(
      findMessageId(message({ headers: { 'message-id': Buffer.from('b') } }), undefined),
    ).toEqual({ id: 'b', source: 'header' });
    expect(findMessageId(message(), extractor)).toEqual({
      id: 'from-extractor',
      source: 'extractor',
    });
  });

  it('reports no id when none is found or the extractor throws', () => {
    expect(findMessageId(message({ messageId: '' }), undefined)).toEqual({
      id: undefined,
      source: 'none',
    });
    expect(findMessageId(message(), () => undefined).id).toBeUndefined();
    const boom = new Error('bad');
    expect(
      findMessageId(message(), () => {
        throw boom;
      }),
    ).toEqual({ id: undefined, source: 'none', extractorError: boom });
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
    const envelope = toEnvelope(msg, 'orders', 'id-1', tenantHeaderScope);
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
      tenantHeaderScope,
    );
    expect(envelope.delivery).toMatchObject({ redelivered: true, attempt: 3 });
  });

  it('leaves scope, key and receive count out when absent; a throwing scope extractor means none', () => {
    const envelope = toEnvelope(message(), 'q', undefined, () => {
      throw new Error('no');
    });
    expect(envelope.id).toBeUndefined();
    expect(envelope).not.toHaveProperty('scope');
    expect(envelope).not.toHaveProperty('key');
    expect(envelope.delivery).not.toHaveProperty('receiveCount');
    expect(envelope.delivery.redelivered).toBe(false);
  });
});
