import type { Message } from '@aws-sdk/client-sqs';
import { toEnvelope, type EnvelopeSettings } from './envelope';

const settings = (over: Partial<EnvelopeSettings['messageId']> = {}): EnvelopeSettings => ({
  queueUrl: 'http://localhost:9324/000000000000/q',
  messageId: { header: 'message-id', extract: undefined, fallback: true, ...over },
  scopeHeader: 'tenant',
  onExtractError: () => undefined,
});

const message = (over: Partial<Message> = {}): Message => ({
  MessageId: 'sqs-1',
  ReceiptHandle: 'rh',
  Body: '{"id":"body-id"}',
  Attributes: { ApproximateReceiveCount: '3', MessageGroupId: 'g-1' },
  MessageAttributes: {
    'message-id': { DataType: 'String', StringValue: 'attr-id' },
    tenant: { DataType: 'String', StringValue: 'acme' },
  },
  ...over,
});

describe('toEnvelope', () => {
  it('maps id, scope, group key, headers, body and the receive count', () => {
    const envelope = toEnvelope(message(), settings());
    expect(envelope).toMatchObject({
      id: 'attr-id',
      scope: 'acme',
      key: 'g-1',
      headers: { 'message-id': 'attr-id', tenant: 'acme' },
      body: '{"id":"body-id"}',
      delivery: { receiveCount: 3, source: 'http://localhost:9324/000000000000/q' },
    });
  });

  it('takes the id from the attribute, else the extractor, else the SQS MessageId', () => {
    const extract = (m: Message) => (JSON.parse(m.Body ?? '{}') as { id?: string }).id;
    const bare = message({ MessageAttributes: {} });
    expect(toEnvelope(bare, settings({ extract })).id).toBe('body-id');
    expect(toEnvelope(bare, settings()).id).toBe('sqs-1');
    expect(toEnvelope(bare, settings({ fallback: false })).id).toBeUndefined();
  });

  it('reports an extractor that throws and leaves the id missing', () => {
    const seen: unknown[] = [];
    const envelope = toEnvelope(message({ MessageAttributes: {} }), {
      ...settings({
        fallback: false,
        extract: () => {
          throw new Error('bad body');
        },
      }),
      onExtractError: (error) => seen.push(error),
    });
    expect(envelope.id).toBeUndefined();
    expect(seen).toHaveLength(1);
  });
});
