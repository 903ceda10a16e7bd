import type { ConsumeMessage } from 'amqplib';
import { encodableHeaders, headersToStrings } from '../client/headers';
import { resolveMessageIdOptions } from '@justonce/core/transport';
import { messageIdOf, toEnvelope } from './envelope';
import { encode, u8, u32, noReport, decodeFields } from '../../test/envelope-arbitraries';

describe('inputs the properties found (each threw, or mapped or republished wrongly, before)', () => {
  const key = (k: string) => Buffer.concat([u8(Buffer.byteLength(k)), Buffer.from(k)]);
  const withHeaders = (
    headers: unknown,
    redelivered: unknown = false,
    messageId: string | null = 'm',
  ): ConsumeMessage =>
    ({
      content: Buffer.from('x'),
      fields: { deliveryTag: 1, redelivered, exchange: '', routingKey: 'q', consumerTag: 'c' },
      properties: { messageId, headers },
    }) as unknown as ConsumeMessage;
  // `{ nested: { __proto__: bytes "ab" } }` on the wire: decoded, `nested` inherits from a Buffer.
  const inner = Buffer.concat([key('__proto__'), Buffer.from('x'), u32(2), Buffer.from('ab')]);
  const bufferLike = decodeFields(
    Buffer.concat([key('nested'), Buffer.from('F'), u32(inner.length), inner]),
  );

  it('a nested table that inherits from a Buffer is mapped, and republished, without a TypeError', () => {
    expect(toEnvelope(withHeaders(bufferLike), 'q', 'm', 'tenant').headers).toEqual({
      nested: '{}',
    });
    expect(() => encode(bufferLike)).toThrow(/TypedArray/);
    expect(decodeFields(encode(encodableHeaders(bufferLike)))).toEqual({ nested: {} });
  });

  it('an invalid Date is "Invalid Date", not a RangeError', () => {
    const headers = { d: new Date(Number.NaN) };
    expect(toEnvelope(withHeaders(headers), 'q', 'm', 'tenant').headers).toEqual({
      d: 'Invalid Date',
    });
  });

  it('message-id and tenant bytes that are not UTF-8 are handed on as the bytes', () => {
    const fe = Buffer.from([0x61, 0xfe]);
    const ff = Buffer.from([0x61, 0xff]);
    const options = resolveMessageIdOptions<ConsumeMessage>(undefined);
    const idOf = (b: Buffer) =>
      messageIdOf(withHeaders({ 'message-id': b }, false, null), options, noReport);
    expect(idOf(fe)).toBe(fe);
    expect(idOf(ff)).toBe(ff);
    expect(toEnvelope(withHeaders({ tenant: ff }), 'q', 'm', 'tenant').scope).toBe(ff);
  });

  it('an x-delivery-count beyond 2^53 is no receive count; a non-boolean redelivered is false', () => {
    const envelope = toEnvelope(
      withHeaders({ 'x-delivery-count': 2 ** 60 }, 1),
      'q',
      'm',
      'tenant',
    );
    expect(envelope.delivery).not.toHaveProperty('receiveCount');
    expect(envelope.delivery.redelivered).toBe(false);
  });

  it('an own __proto__ header is kept', () => {
    const headers = JSON.parse('{"__proto__":"p","a":"b"}') as Record<string, unknown>;
    expect(Object.keys(headersToStrings(headers))).toEqual(['__proto__', 'a']);
  });

  it('republishes a double below -2^63 and a nested "!" or hasOwnProperty field', () => {
    const headers = { huge: -1e300, typed: { '!': 'oops', x: 1 }, own: { hasOwnProperty: 'x' } };
    expect(() => encode(headers)).toThrow();
    expect(decodeFields(encode(encodableHeaders(headers)))).toEqual({
      huge: -1e300,
      typed: '{"!":"oops","x":1}',
      own: '{"hasOwnProperty":"x"}',
    });
  });
});
