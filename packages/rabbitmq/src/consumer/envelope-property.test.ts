import { createRequire } from 'node:module';
import type { ConsumeMessage } from 'amqplib';
import fc from 'fast-check';
import { encodableHeaders, headersToStrings } from '../amqp/headers';
import { resolveMessageIdOptions } from '@justonce/core';
import { messageIdOf, toEnvelope } from './envelope';

/**
 * Property tests of the mapping from an AMQP delivery to the inbox's envelope. Header tables
 * are generated as AMQP wire bytes and decoded by amqplib's own codec, so every field type a
 * broker can deliver turns up as amqplib hands it over; a second generator adds JavaScript
 * values amqplib never produces (a caller could). A throw here would bring the delivery back
 * forever.
 */

const RUNS = 2_000;

/** amqplib's field-table codec (internal, untyped; the one the channel uses). */
const { decodeFields, encodeTable } = createRequire(__filename)('amqplib/lib/codec') as {
  decodeFields: (table: Buffer) => Record<string, unknown>;
  encodeTable: (buffer: Buffer, table: unknown, offset: number) => number;
};

/** `table` encoded as amqplib writes it in a publish (a throw is what fails the publish). */
function encode(table: unknown): Buffer {
  const buffer = Buffer.alloc(1 << 20);
  const size = encodeTable(buffer, table, 0);
  return buffer.subarray(4, size);
}

const u8 = (n: number) => Buffer.from([n]);
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((b) => Buffer.from(b));
const fixed = (n: number) =>
  fc.uint8Array({ minLength: n, maxLength: n }).map((b) => Buffer.from(b));

/** Any UTF-16 code unit, so lone surrogates and U+0000 turn up. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));
const anyText = fc.oneof(
  fc.string({ unit: codeUnit, maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom('', 'a\u0000b', '\u0000', 'a\uD800b', '\uDC00', '😀'),
);

/** Text as AMQP carries it: UTF-8 of any string, or bytes that are not UTF-8 at all. */
const wireText = fc.oneof(
  anyText.map((t) => Buffer.from(t, 'utf8')),
  bytes(24),
  fc.constantFrom(Buffer.from([0x61, 0xff]), Buffer.from([0x61, 0xfe]), Buffer.from([0xc3])),
);

/** Header names the mapping looks up, or that collide with `Object.prototype`. */
const SPECIAL_NAMES = [
  'message-id',
  'tenant',
  'partition-key',
  'correlation-id',
  'x-delivery-count',
  'x-justonce-retry-attempt',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  '!',
  'value',
];

const wireName = fc
  .oneof(
    { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_NAMES).map((n) => Buffer.from(n)) },
    { weight: 2, arbitrary: wireText },
  )
  .map((name) => Buffer.concat([u8(name.length), name]));

/** One tagged field value in wire format, of every type amqplib decodes. */
const wire = fc.letrec<{ value: Buffer; table: Buffer }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.integer({ min: -128, max: 127 }).map((n) => Buffer.from([0x62, n & 0xff])), // b
    fc.integer({ min: 0, max: 255 }).map((n) => Buffer.from([0x42, n])), // B
    fixed(2).map((b) => Buffer.concat([Buffer.from('s'), b])),
    fixed(2).map((b) => Buffer.concat([Buffer.from('u'), b])),
    fixed(4).map((b) => Buffer.concat([Buffer.from('I'), b])),
    fixed(4).map((b) => Buffer.concat([Buffer.from('i'), b])),
    fixed(8).map((b) => Buffer.concat([Buffer.from('l'), b])), // int64, often beyond 2^53
    fixed(4).map((b) => Buffer.concat([Buffer.from('f'), b])), // float: NaN, ±Infinity, -0
    fixed(8).map((b) => Buffer.concat([Buffer.from('d'), b])),
    fixed(5).map((b) => Buffer.concat([Buffer.from('D'), b])), // decimal
    fixed(8).map((b) => Buffer.concat([Buffer.from('T'), b])), // timestamp
    fc.integer({ min: 0, max: 255 }).map((n) => Buffer.from([0x74, n])), // t (boolean)
    fc.constant(Buffer.from('V')), // void (null)
    wireText.map((t) => Buffer.concat([Buffer.from('S'), u32(t.length), t])),
    bytes(24).map((b) => Buffer.concat([Buffer.from('x'), u32(b.length), b])),
    fc
      .array(tie('value'), { maxLength: 4 })
      .map((items) =>
        Buffer.concat([Buffer.from('A'), u32(Buffer.concat(items).length), ...items]),
      ),
    tie('table').map((t) => Buffer.concat([Buffer.from('F'), u32(t.length), t])),
  ),
  table: fc
    .array(fc.tuple(wireName, tie('value')), { maxLength: 6 })
    .map((fields) => Buffer.concat(fields.flat())),
}));

/** A header table exactly as amqplib delivers it. */
const decodedTable = wire.table.map((t) => decodeFields(t));

/** JavaScript values amqplib never decodes to, but a hand-built delivery might hold. */
const circular: Record<string, unknown> = { a: 1 };
circular.self = circular;
const jsValue = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    anyText,
    fc.double(),
    fc.integer(),
    fc.bigInt(),
    fc.boolean(),
    fc.constantFrom(null, undefined, Symbol('s'), () => 1, circular),
    fc.date({ noInvalidDate: false }),
    bytes(16),
    fc.record({ '!': fc.constantFrom('timestamp', 'decimal'), value: fc.nat() }),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...SPECIAL_NAMES), anyText), tie('value'), {
      maxKeys: 3,
    }),
  ),
}));
const jsTable = fc.dictionary(fc.oneof(fc.constantFrom(...SPECIAL_NAMES), anyText), jsValue.value, {
  maxKeys: 8,
});

const headers = fc.oneof(
  { weight: 4, arbitrary: decodedTable },
  { weight: 2, arbitrary: jsTable },
  { weight: 1, arbitrary: fc.constantFrom(undefined, null, 'text', 42, [1, 'a']) },
);

/** `properties.messageId`: a string as amqplib decodes it, or anything a caller might set. */
const messageId = fc.oneof(
  { weight: 4, arbitrary: wireText.map((t) => t.toString('utf8')) },
  { weight: 2, arbitrary: anyText },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), bytes(8), fc.constantFrom(undefined, null)) },
);

const delivery: fc.Arbitrary<ConsumeMessage> = fc
  .record({
    content: bytes(256),
    redelivered: fc.oneof(fc.boolean(), fc.constantFrom(0, 1, 'yes', undefined)),
    messageId,
    correlationId: fc.oneof(anyText, fc.integer(), fc.constant(undefined)),
    headers,
  })
  .map(
    (d) =>
      ({
        content: d.content,
        fields: {
          deliveryTag: 1,
          redelivered: d.redelivered,
          exchange: '',
          routingKey: 'q',
          consumerTag: 'c',
        },
        properties: {
          contentType: undefined,
          contentEncoding: undefined,
          headers: d.headers,
          deliveryMode: 2,
          priority: undefined,
          correlationId: d.correlationId,
          replyTo: undefined,
          expiration: undefined,
          messageId: d.messageId,
          timestamp: undefined,
          type: undefined,
          userId: undefined,
          appId: undefined,
          clusterId: undefined,
        },
      }) as unknown as ConsumeMessage,
  );

/** An id extractor that is absent, answers anything, or throws. */
const extractor = fc.oneof(
  fc.constant(undefined),
  fc.oneof(anyText, fc.integer(), fc.constant(undefined)).map((v) => () => v as string),
  anyText.map((v) => () => {
    throw new Error(v);
  }),
);

function own(object: unknown, key: string): unknown {
  if (typeof object !== 'object' || object === null) return undefined;
  return Object.hasOwn(object, key) ? (object as Record<string, unknown>)[key] : undefined;
}

/** A real Buffer (`Buffer.isBuffer` is also true for a table whose prototype is one). */
function isBytes(value: unknown): value is Buffer {
  return ArrayBuffer.isView(value) && Buffer.isBuffer(value);
}

function isUtf8(b: Buffer): boolean {
  return Buffer.from(b.toString('utf8'), 'utf8').equals(b);
}

/** The id options: an optional extract, the fallback to the property on or off. */
const idOptions = fc
  .record({ extract: extractor, fallback: fc.boolean() })
  .map(({ extract, fallback }) =>
    resolveMessageIdOptions<ConsumeMessage>({
      ...(extract ? { extract: extract as (m: ConsumeMessage) => string | undefined } : {}),
      fallback,
    }),
  );

const noReport = () => undefined;

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
