/**
 * The generators and the model of the mapping shared by the envelope's property test and its
 * regression cases. @internal
 */
import type { Message } from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { type EnvelopeSettings } from '../src/consumer/envelope';
/**
 * Property tests of the mapping from a received SQS message to the inbox's envelope. The SDK
 * types say what SQS sends; these feed it anything (wrong types included), because a throw
 * here is retried as a store failure and the message would come back forever.
 */

export const RUNS = 3_000;
export const QUEUE_URL = 'http://localhost:9324/000000000000/q';

/** Names that collide with `Object.prototype` or with names the mapping looks up. */
export const SPECIAL_NAMES = [
  'message-id',
  'Message-ID',
  'tenant',
  'body-encoding',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '',
] as const;

/** Any UTF-16 code unit, so lone surrogates and U+0000 turn up. */
export const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));
export const anyText = fc.oneof(
  fc.string({ unit: codeUnit, maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', 'a\u0000b', '\u0000', 'a\uD800b', '\uDC00', '😀', 'x'.repeat(300)),
);
export const name = fc.oneof(fc.constantFrom(...SPECIAL_NAMES), anyText);

/** Values of the wrong type for a field typed as string (or bytes). */
export const wrongType = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.bigInt(),
  fc.constant(Symbol('s')),
  fc.constant(() => 'fn'),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
  fc.uint8Array({ maxLength: 8 }).map((b) => Buffer.from(b)),
  fc.constant(new Date(Number.NaN)),
);

export const dataType = fc.oneof(
  fc.constantFrom('String', 'Number', 'Binary'),
  fc
    .tuple(fc.constantFrom('String', 'Number', 'Binary'), fc.string({ maxLength: 10 }))
    .map(([base, custom]) => `${base}.${custom}`),
  anyText,
  wrongType,
  fc.constant(undefined),
);

/** One message attribute value: well-formed, half-formed, or not an object at all. */
export const attributeValue: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      {
        DataType: dataType,
        StringValue: fc.oneof(anyText, wrongType, fc.constant(undefined)),
        BinaryValue: fc.oneof(fc.uint8Array({ maxLength: 16 }), wrongType, fc.constant(undefined)),
        StringListValues: fc.oneof(fc.array(anyText, { maxLength: 2 }), wrongType),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: wrongType },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

export const messageAttributes = fc.oneof(
  { weight: 6, arbitrary: fc.dictionary(name, attributeValue, { maxKeys: 12 }) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: wrongType },
);

export const receiveCount = fc.oneof(
  fc.nat().map(String),
  fc.constantFrom(
    '',
    '0',
    '-1',
    '1.5',
    '1e3',
    ' 2 ',
    '0x10',
    '+3',
    'Infinity',
    'NaN',
    '9'.repeat(400),
    '9007199254740993',
    '１',
  ),
  anyText,
  wrongType,
);

export const systemAttributes = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      {
        ApproximateReceiveCount: receiveCount,
        MessageGroupId: fc.oneof(anyText, wrongType),
        SentTimestamp: fc.oneof(fc.nat().map(String), wrongType),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: wrongType },
);

/** A body: text of any code units, empty, missing, 256 KiB, or not a string at all. */
export const HUGE = 'x'.repeat(256 * 1024 - 1) + '\u0000';
export const body = fc.oneof(
  { weight: 6, arbitrary: anyText },
  {
    weight: 2,
    arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64')),
  },
  { weight: 1, arbitrary: fc.constantFrom(undefined, '', HUGE) },
  { weight: 1, arbitrary: wrongType },
);

export const message: fc.Arbitrary<Message> = fc
  .record(
    {
      MessageId: fc.oneof(anyText, wrongType, fc.constant(undefined)),
      ReceiptHandle: fc.string({ maxLength: 10 }),
      MD5OfBody: fc.string({ maxLength: 10 }),
      Body: body,
      Attributes: systemAttributes,
      MessageAttributes: messageAttributes,
    },
    { requiredKeys: [] },
  )
  .map((m) => m as unknown as Message);

export type Extract = NonNullable<EnvelopeSettings['messageId']['extract']>;

/** What a `messageId.extract` returns, or that it throws (a value, not only an Error). */
export const extractBehaviour = fc.oneof(
  fc.record({ kind: fc.constant('none' as const) }),
  fc.record({ kind: fc.constant('returns' as const), value: fc.oneof(anyText, wrongType) }),
  fc.record({ kind: fc.constant('throws' as const), value: fc.oneof(anyText, wrongType) }),
);

export const settings = fc.record({
  header: fc.constantFrom('message-id', 'id', '__proto__', 'constructor', 'toString'),
  scopeHeader: fc.constantFrom('tenant', '__proto__', 'constructor', 'hasOwnProperty'),
  fallback: fc.boolean(),
  extract: extractBehaviour,
  loggerThrows: fc.boolean(),
});

export type SettingsInput = typeof settings extends fc.Arbitrary<infer T> ? T : never;

export function build(s: SettingsInput): { settings: EnvelopeSettings; extractErrors: unknown[] } {
  const extractErrors: unknown[] = [];
  let extract: Extract | undefined;
  if (s.extract.kind === 'returns') {
    const value = s.extract.value;
    extract = () => value as string | undefined;
  } else if (s.extract.kind === 'throws') {
    const value = s.extract.value;
    extract = () => {
      throw value;
    };
  }
  return {
    extractErrors,
    settings: {
      queueUrl: QUEUE_URL,
      messageId: {
        header: s.header,
        extract,
        fallback: s.fallback,
      },
      scopeHeader: s.scopeHeader,
      onExtractError: (error) => {
        extractErrors.push(error);
        // A logger that throws must not take the message down with it.
        if (s.loggerThrows) throw new Error('logger down');
      },
    },
  };
}

/** `object[key]` when it is an own property (never an inherited `toString` or the like). */
export function own(object: unknown, key: string): unknown {
  if (typeof object !== 'object' || object === null) return undefined;
  return Object.prototype.hasOwnProperty.call(object, key)
    ? (object as Record<string, unknown>)[key]
    : undefined;
}

/** The headers as the model sees them: String and Number attributes with a string value. */
export function expectedHeaders(attributes: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (typeof attributes !== 'object' || attributes === null) return out;
  for (const key of Object.keys(attributes)) {
    const value = (attributes as Record<string, unknown>)[key];
    const type = own(value, 'DataType');
    const text = own(value, 'StringValue');
    if (
      typeof type === 'string' &&
      (type.startsWith('String') || type.startsWith('Number')) &&
      typeof text === 'string'
    ) {
      out.set(key, text);
    }
  }
  return out;
}

/**
 * The message-id attribute as core's rules read it: the attribute of that exact name, else
 * the first whose name matches it case-insensitively (proxies change header case).
 */
export function idAttribute(headers: Map<string, string>, name: string): string | undefined {
  if (headers.has(name)) return headers.get(name);
  const lower = name.toLowerCase();
  for (const [key, value] of headers) if (key.toLowerCase() === lower) return value;
  return undefined;
}

/** The id the consumer must dedupe on, by the documented rules: attribute, extract, MessageId. */
export function expectedId(m: Message, headers: Map<string, string>, s: SettingsInput): unknown {
  const fromAttribute = idAttribute(headers, s.header);
  if (fromAttribute !== undefined && fromAttribute !== '') return fromAttribute;
  if (s.extract.kind === 'throws') return undefined;
  if (s.extract.kind === 'returns') {
    const v = s.extract.value;
    if (typeof v === 'string' && v !== '') return v;
  }
  if (!s.fallback) return undefined;
  const sqsId: unknown = m.MessageId;
  // Not a string (SQS never sends that): carried unchanged, so the inbox refuses it.
  return sqsId === undefined || sqsId === null || sqsId === '' ? undefined : sqsId;
}

export function expectedReceiveCount(m: Message): number | undefined {
  const raw = own(m.Attributes, 'ApproximateReceiveCount');
  if (typeof raw !== 'string' || !/^[1-9][0-9]*$/.test(raw)) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : undefined;
}
