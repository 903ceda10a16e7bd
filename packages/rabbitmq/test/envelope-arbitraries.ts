/**
 * The generators and the model of the mapping shared by the envelope's property test and its
 * regression cases. @internal
 */
import { createRequire } from 'node:module';
import type { ConsumeMessage } from 'amqplib';
import fc from 'fast-check';
import { resolveMessageIdOptions } from '@justonce/core/transport';
/**
 * Property tests of the mapping from an AMQP delivery to the inbox's envelope. Header tables
 * are generated as AMQP wire bytes and decoded by amqplib's own codec, so every field type a
 * broker can deliver turns up as amqplib hands it over; a second generator adds JavaScript
 * values amqplib never produces (a caller could). A throw here would bring the delivery back
 * forever.
 */

export const RUNS = 2_000;

/** amqplib's field-table codec (internal, untyped; the one the channel uses). */
export const { decodeFields, encodeTable } = createRequire(__filename)('amqplib/lib/codec') as {
  decodeFields: (table: Buffer) => Record<string, unknown>;
  encodeTable: (buffer: Buffer, table: unknown, offset: number) => number;
};

/** `table` encoded as amqplib writes it in a publish (a throw is what fails the publish). */
export function encode(table: unknown): Buffer {
  const buffer = Buffer.alloc(1 << 20);
  const size = encodeTable(buffer, table, 0);
  return buffer.subarray(4, size);
}

export const u8 = (n: number) => Buffer.from([n]);
export const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
export const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((b) => Buffer.from(b));
export const fixed = (n: number) =>
  fc.uint8Array({ minLength: n, maxLength: n }).map((b) => Buffer.from(b));

/** Any UTF-16 code unit, so lone surrogates and U+0000 turn up. */
export const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));
export const anyText = fc.oneof(
  fc.string({ unit: codeUnit, maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom('', 'a\u0000b', '\u0000', 'a\uD800b', '\uDC00', '😀'),
);

/** Text as AMQP carries it: UTF-8 of any string, or bytes that are not UTF-8 at all. */
export const wireText = fc.oneof(
  anyText.map((t) => Buffer.from(t, 'utf8')),
  bytes(24),
  fc.constantFrom(Buffer.from([0x61, 0xff]), Buffer.from([0x61, 0xfe]), Buffer.from([0xc3])),
);

/** Header names the mapping looks up, or that collide with `Object.prototype`. */
export const SPECIAL_NAMES = [
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

export const wireName = fc
  .oneof(
    { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_NAMES).map((n) => Buffer.from(n)) },
    { weight: 2, arbitrary: wireText },
  )
  .map((name) => Buffer.concat([u8(name.length), name]));

/** One tagged field value in wire format, of every type amqplib decodes. */
export const wire = fc.letrec<{ value: Buffer; table: Buffer }>((tie) => ({
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
export const decodedTable = wire.table.map((t) => decodeFields(t));

/** JavaScript values amqplib never decodes to, but a hand-built delivery might hold. */
export const circular: Record<string, unknown> = { a: 1 };
circular.self = circular;
export const jsValue = fc.letrec<{ value: unknown }>((tie) => ({
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
export const jsTable = fc.dictionary(
  fc.oneof(fc.constantFrom(...SPECIAL_NAMES), anyText),
  jsValue.value,
  {
    maxKeys: 8,
  },
);

export const headers = fc.oneof(
  { weight: 4, arbitrary: decodedTable },
  { weight: 2, arbitrary: jsTable },
  { weight: 1, arbitrary: fc.constantFrom(undefined, null, 'text', 42, [1, 'a']) },
);

/** `properties.messageId`: a string as amqplib decodes it, or anything a caller might set. */
export const messageId = fc.oneof(
  { weight: 4, arbitrary: wireText.map((t) => t.toString('utf8')) },
  { weight: 2, arbitrary: anyText },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), bytes(8), fc.constantFrom(undefined, null)) },
);

export const delivery: fc.Arbitrary<ConsumeMessage> = fc
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
export const extractor = fc.oneof(
  fc.constant(undefined),
  fc.oneof(anyText, fc.integer(), fc.constant(undefined)).map((v) => () => v as string),
  anyText.map((v) => () => {
    throw new Error(v);
  }),
);

export function own(object: unknown, key: string): unknown {
  if (typeof object !== 'object' || object === null) return undefined;
  return Object.hasOwn(object, key) ? (object as Record<string, unknown>)[key] : undefined;
}

/** A real Buffer (`Buffer.isBuffer` is also true for a table whose prototype is one). */
export function isBytes(value: unknown): value is Buffer {
  return ArrayBuffer.isView(value) && Buffer.isBuffer(value);
}

export function isUtf8(b: Buffer): boolean {
  return Buffer.from(b.toString('utf8'), 'utf8').equals(b);
}

/** The id options: an optional extract, the fallback to the property on or off. */
export const idOptions = fc
  .record({ extract: extractor, fallback: fc.boolean() })
  .map(({ extract, fallback }) =>
    resolveMessageIdOptions<ConsumeMessage>({
      ...(extract ? { extract: extract as (m: ConsumeMessage) => string | undefined } : {}),
      fallback,
    }),
  );

export const noReport = () => undefined;
