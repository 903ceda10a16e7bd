import type { Message } from '@aws-sdk/client-sqs';
import { toEnvelope, type EnvelopeSettings } from './envelope';
import { build } from '../../test/envelope-arbitraries';

describe('toEnvelope: inputs the properties found (each threw or mapped wrongly before)', () => {
  const base = build({
    header: 'message-id',
    scopeHeader: 'tenant',
    fallback: true,
    extract: { kind: 'none' },
    loggerThrows: false,
  }).settings;
  const withId = (over: Partial<EnvelopeSettings['messageId']>): EnvelopeSettings => ({
    ...base,
    messageId: { ...base.messageId, ...over },
  });
  const odd = (m: Record<string, unknown>) => m as unknown as Message;

  it('an attribute value that is null, or whose DataType is not a string, is left out', () => {
    expect(
      toEnvelope(odd({ MessageId: 'm', MessageAttributes: { a: null } }), base).headers,
    ).toEqual({});
    const typed = odd({
      MessageId: 'm',
      MessageAttributes: { a: { DataType: [], StringValue: 'x' } },
    });
    expect(toEnvelope(typed, base).headers).toEqual({});
  });

  it('a base64-marked body that is not a string is handed on unchanged (INVALID_BODY)', () => {
    const m = odd({
      MessageId: 'm',
      Body: 5,
      MessageAttributes: { 'body-encoding': { DataType: 'String', StringValue: 'base64' } },
    });
    expect(toEnvelope(m, base).body).toBe(5);
  });

  it('a receive count that is not decimal digits (a Symbol, 0x10, 1e20) is left out', () => {
    for (const count of [Symbol('n'), '0x10', ' 2 ', '100000000000000000000']) {
      const m = odd({ MessageId: 'm', Attributes: { ApproximateReceiveCount: count } });
      expect(toEnvelope(m, base).delivery).not.toHaveProperty('receiveCount');
    }
  });

  it('an onExtractError that throws leaves the message without an id, not thrown', () => {
    const settings: EnvelopeSettings = {
      ...withId({
        fallback: false,
        extract: () => {
          throw new Error('bad body');
        },
      }),
      onExtractError: () => {
        throw new Error('logger down');
      },
    };
    expect(toEnvelope({ MessageId: 'm' }, settings).id).toBeUndefined();
  });

  it('names of Object.prototype are read from the message only', () => {
    const proto = odd({
      MessageId: 'sqs-id',
      MessageAttributes: JSON.parse('{"__proto__":{"DataType":"String","StringValue":"mine"}}'),
    });
    const fromProto = toEnvelope(proto, withId({ header: '__proto__' }));
    expect(fromProto.id).toBe('mine');
    expect(Object.keys(fromProto.headers)).toEqual(['__proto__']);
    expect(toEnvelope({ MessageId: 'sqs-id' }, withId({ header: 'toString' })).id).toBe('sqs-id');
    const scoped = toEnvelope({ MessageId: 'm' }, { ...base, scopeHeader: 'constructor' });
    expect(scoped).not.toHaveProperty('scope');
  });

  it('a MessageGroupId that is not a string is no key', () => {
    expect(
      toEnvelope(odd({ MessageId: 'm', Attributes: { MessageGroupId: 7 } }), base),
    ).not.toHaveProperty('key');
  });
});
