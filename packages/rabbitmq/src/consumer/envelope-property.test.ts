import type { ConsumeMessage } from 'amqplib';
import fc from 'fast-check';
import { encodableHeaders, headersToStrings } from '../client/headers';
import { resolveMessageIdOptions } from '@justonce/core/transport';
import { messageIdOf, toEnvelope } from './envelope';
import {
  RUNS,
  encode,
  wireText,
  decodedTable,
  jsTable,
  delivery,
  own,
  isBytes,
  isUtf8,
  idOptions,
  noReport,
  decodeFields,
} from '../../test/envelope-arbitraries';

describe('messageIdOf + toEnvelope (property)', () => {
  it('never throw, and carry id, headers, scope and body through unchanged', () => {
    fc.assert(
      fc.property(delivery, idOptions, (message, options) => {
        const found = messageIdOf(message, options, noReport);
        const envelope = toEnvelope(message, 'q', found, 'tenant');
        const input = message.properties.headers;

        // The id: the header (bytes that are not UTF-8 as the bytes, for the inbox to refuse),
        // else the extractor, else (with fallback) the property as given.
        const property: unknown = message.properties.messageId;
        const header = own(input, 'message-id');
        const headerCase = (key: string) => key.toLowerCase() === 'message-id';
        const anyHeader =
          typeof input === 'object' && input !== null && Object.keys(input).some(headerCase);
        if (typeof header === 'string' && header !== '') {
          expect(envelope.id).toBe(header);
        } else if (isBytes(header) && header.length > 0) {
          if (isUtf8(header)) expect(envelope.id).toBe(header.toString('utf8'));
          else expect(envelope.id).toBe(header);
        } else if (!anyHeader && options.extract === undefined) {
          const usable = options.fallback && property !== undefined && property !== null;
          expect(envelope.id).toBe(usable && property !== '' ? property : undefined);
        }
        // Anything but text is what the inbox refuses (INVALID_MESSAGE_ID): a header's bytes
        // that are not UTF-8, or a property a hand-built delivery set to something else.
        const id: unknown = envelope.id;
        expect(
          id === undefined || typeof id === 'string' || Buffer.isBuffer(id) || id === property,
        ).toBe(true);

        // Headers: strings only, every string header unchanged under its own name.
        for (const key of Object.keys(envelope.headers)) {
          expect(typeof envelope.headers[key]).toBe('string');
        }
        if (typeof input === 'object' && input !== null) {
          for (const [key, value] of Object.entries(input)) {
            // An empty correlation-id header gives way to properties.correlationId.
            const replaced = key === 'correlation-id' && value === '';
            if (typeof value === 'string' && !replaced) {
              expect(own(envelope.headers, key)).toBe(value);
            }
            if (typeof value === 'number') expect(own(envelope.headers, key)).toBe(String(value));
          }
        }

        // The scope: what the `tenant` header holds (bytes that are not UTF-8 as the bytes).
        const tenant = own(input, 'tenant');
        if (typeof tenant === 'string' && tenant !== '') expect(envelope.scope).toBe(tenant);
        if (isBytes(tenant) && tenant.length > 0 && !isUtf8(tenant)) {
          expect(envelope.scope).toBe(tenant);
        }

        expect(envelope.body).toBe(message.content);
        expect(typeof envelope.delivery.redelivered).toBe('boolean');
        for (const n of [envelope.delivery.receiveCount, envelope.delivery.attempt]) {
          if (n !== undefined) expect(Number.isSafeInteger(n) && n >= 1).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('two different message-id headers never become one id (no message is taken for another)', () => {
    const withHeader = (value: Buffer | string): ConsumeMessage =>
      ({
        content: Buffer.from('x'),
        fields: {
          deliveryTag: 1,
          redelivered: false,
          exchange: '',
          routingKey: 'q',
          consumerTag: 'c',
        },
        properties: { headers: { 'message-id': value } },
      }) as unknown as ConsumeMessage;
    fc.assert(
      fc.property(wireText, wireText, (a, b) => {
        fc.pre(!a.equals(b));
        const options = resolveMessageIdOptions<ConsumeMessage>(undefined);
        const idA: unknown = messageIdOf(withHeader(a), options, noReport);
        const idB: unknown = messageIdOf(withHeader(b), options, noReport);
        // Equal text would dedupe the second message as a duplicate of the first: lost.
        if (typeof idA === 'string' && typeof idB === 'string') expect(idA).not.toBe(idB);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('headersToStrings (property)', () => {
  it('never throws on a table amqplib decodes, and keeps every field it can express', () => {
    fc.assert(
      fc.property(decodedTable, (table) => {
        const out = headersToStrings(table);
        for (const key of Object.keys(table)) {
          const value = table[key];
          if (value === null) expect(Object.hasOwn(out, key)).toBe(false);
          else expect(typeof own(out, key)).toBe('string');
        }
        expect(Object.keys(out).sort()).toEqual(
          Object.keys(table)
            .filter((k) => table[k] !== null)
            .sort(),
        );
      }),
      { numRuns: RUNS },
    );
  });
});

/** Whether an object in `value` has an own `__proto__` field or an unusual prototype. */
function prototypeTouched(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || isBytes(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  if (Array.isArray(value)) return value.some(prototypeTouched);
  if (proto !== Object.prototype && proto !== null) return true;
  if (Object.hasOwn(value, '__proto__')) return true;
  return Object.values(value).some(prototypeTouched);
}

describe('encodableHeaders (property)', () => {
  it('makes every table amqplib decodes encodable again, and changes none it could encode', () => {
    fc.assert(
      fc.property(fc.oneof(decodedTable, jsTable), (table) => {
        const copy = encodableHeaders(table);
        const bytes = encode(copy);
        let original: Buffer | undefined;
        try {
          original = encode(table);
        } catch {
          original = undefined;
        }
        // Where amqplib could encode the table itself, the copy reads back the same (unless a
        // `__proto__` field is involved: amqplib also encodes the fields a table inherits).
        if (original !== undefined && !prototypeTouched(table)) {
          expect(decodeFields(bytes)).toEqual(decodeFields(original));
        }
      }),
      { numRuns: 2_000 },
    );
  });
});
