import { hasErrorCode } from '@justonce/core';
import type { OutgoingMessage } from '@justonce/core/transport';
import { fifoId, prepareEntry, type EntrySettings } from './entry';

const settings: EntrySettings = { fifo: false, maxMessageBytes: 262_144, bodyEncoding: 'utf8' };
const message = (over: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  messageId: 'id-1',
  destination: 'orders',
  key: 'k-1',
  headers: { 'correlation-id': 'c-1' },
  payload: new TextEncoder().encode('{"a":1}'),
  ...over,
});

describe('prepareEntry', () => {
  it('carries the message id and headers as String attributes and counts the bytes', () => {
    const entry = prepareEntry(message(), 0, settings);
    if (!('entry' in entry)) throw entry;
    expect(entry.entry).toEqual({
      MessageBody: '{"a":1}',
      MessageAttributes: {
        'correlation-id': { DataType: 'String', StringValue: 'c-1' },
        'message-id': { DataType: 'String', StringValue: 'id-1' },
      },
    });
    expect(entry.bytes).toBe(
      7 + ('correlation-id' + 'String' + 'c-1').length + ('message-id' + 'String' + 'id-1').length,
    );
  });

  it('sets the FIFO group from the key (or the id) and the deduplication id from the id', () => {
    const withKey = prepareEntry(message(), 0, { ...settings, fifo: true });
    const noKey = prepareEntry(message({ key: null }), 0, { ...settings, fifo: true });
    expect(withKey).toMatchObject({
      entry: { MessageGroupId: 'k-1', MessageDeduplicationId: 'id-1' },
    });
    expect(noKey).toMatchObject({ entry: { MessageGroupId: 'id-1' } });
    expect(fifoId('ok-id')).toBe('ok-id');
    expect(fifoId('spaces are not allowed')).toMatch(/^[0-9a-f]{64}$/);
    expect(fifoId('x'.repeat(129))).toHaveLength(64);
  });

  it('refuses more than 10 attributes, the message id included', () => {
    const headers = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`h${i}`, 'v']));
    const result = prepareEntry(message({ headers }), 0, settings);
    expect(hasErrorCode(result, 'SQS_TOO_MANY_ATTRIBUTES')).toBe(true);
    expect(
      prepareEntry(
        message({ headers: Object.fromEntries(Object.entries(headers).slice(1)) }),
        0,
        settings,
      ),
    ).toHaveProperty('entry');
  });

  it('counts the base64 marker as an attribute', () => {
    const headers = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`h${i}`, 'v']));
    expect(prepareEntry(message({ headers }), 0, settings)).toHaveProperty('entry');
    const result = prepareEntry(message({ headers }), 0, { ...settings, bodyEncoding: 'base64' });
    expect(hasErrorCode(result, 'SQS_TOO_MANY_ATTRIBUTES')).toBe(true);
  });

  it('refuses a message over the size limit, bad attribute names and empty values', () => {
    const big = prepareEntry(message({ payload: new Uint8Array(2_000).fill(97) }), 0, {
      ...settings,
      maxMessageBytes: 2_000,
    });
    expect(hasErrorCode(big, 'SQS_MESSAGE_TOO_LARGE')).toBe(true);
    expect(big).toMatchObject({ details: { limit: 2_000, bytes: expect.any(Number) } });
    expect(
      hasErrorCode(
        prepareEntry(message({ headers: { 'bad name': 'v' } }), 0, settings),
        'SQS_INVALID_MESSAGE',
      ),
    ).toBe(true);
    expect(
      hasErrorCode(
        prepareEntry(message({ headers: { empty: '' } }), 0, settings),
        'SQS_INVALID_MESSAGE',
      ),
    ).toBe(true);
    expect(
      hasErrorCode(
        prepareEntry(message({ payload: new Uint8Array([0xff]) }), 0, settings),
        'SQS_INVALID_MESSAGE',
      ),
    ).toBe(true);
  });

  it('checks attribute names on every message: a bad name is refused each time, a good one counted each time', () => {
    const bad = message({ headers: { 'AWS.reserved': 'v' } });
    for (let i = 0; i < 3; i++) {
      expect(hasErrorCode(prepareEntry(bad, i, settings), 'SQS_INVALID_MESSAGE')).toBe(true);
    }
    const sizes = [0, 1, 2].map((i) => {
      const entry = prepareEntry(message({ headers: { 'tenant.v1': 'ü' } }), i, settings);
      if (!('entry' in entry)) throw entry;
      return entry.bytes;
    });
    // The value counts in UTF-8 bytes: 'ü' is two.
    const expected =
      7 + ('tenant.v1' + 'String').length + 2 + ('message-id' + 'String' + 'id-1').length;
    expect(sizes).toEqual([expected, expected, expected]);
  });
});
