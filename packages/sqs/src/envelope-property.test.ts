import type { Message } from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { fromMessageAttributes } from './attributes';
import { toEnvelope, type EnvelopeSettings } from './envelope';

/**
 * Property tests of the mapping from a received SQS message to the inbox's envelope. The SDK
 * types say what SQS sends; these feed it anything (wrong types included), because a throw
 * here is retried as a store failure and the message would come back forever.
 */

const RUNS = 3_000;
const QUEUE_URL = 'http://localhost:9324/000000000000/q';

/** Names that collide with `Object.prototype` or with names the mapping looks up. */
const SPECIAL_NAMES = [
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
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));
const anyText = fc.oneof(
  fc.string({ unit: codeUnit, maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', 'a\u0000b', '\u0000', 'a\uD800b', '\uDC00', '😀', 'x'.repeat(300)),
);
const name = fc.oneof(fc.constantFrom(...SPECIAL_NAMES), anyText);

/** Values of the wrong type for a field typed as string (or bytes). */
const wrongType = fc.oneof(
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

const dataType = fc.oneof(
  fc.constantFrom('String', 'Number', 'Binary'),
  fc
    .tuple(fc.constantFrom('String', 'Number', 'Binary'), fc.string({ maxLength: 10 }))
    .map(([base, custom]) => `${base}.${custom}`),
  anyText,
  wrongType,
  fc.constant(undefined),
);

/** One message attribute value: well-formed, half-formed, or not an object at all. */
const attributeValue: fc.Arbitrary<unknown> = fc.oneof(
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

const messageAttributes = fc.oneof(
  { weight: 6, arbitrary: fc.dictionary(name, attributeValue, { maxKeys: 12 }) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: wrongType },
);

const receiveCount = fc.oneof(
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

const systemAttributes = fc.oneof(
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
const HUGE = 'x'.repeat(256 * 1024 - 1) + '\u0000';
const body = fc.oneof(
  { weight: 6, arbitrary: anyText },
  {
    weight: 2,
    arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64')),
  },
  { weight: 1, arbitrary: fc.constantFrom(undefined, '', HUGE) },
  { weight: 1, arbitrary: wrongType },
);

const message: fc.Arbitrary<Message> = fc
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

type Extract = NonNullable<EnvelopeSettings['messageId']['extract']>;

/** What a `messageId.extract` returns, or that it throws (a value, not only an Error). */
const extractBehaviour = fc.oneof(
  fc.record({ kind: fc.constant('none' as const) }),
  fc.record({ kind: fc.constant('returns' as const), value: fc.oneof(anyText, wrongType) }),
  fc.record({ kind: fc.constant('throws' as const), value: fc.oneof(anyText, wrongType) }),
);

const settings = fc.record({
  header: fc.constantFrom('message-id', 'id', '__proto__', 'constructor', 'toString'),
  scopeHeader: fc.constantFrom('tenant', '__proto__', 'constructor', 'hasOwnProperty'),
  fallback: fc.boolean(),
  extract: extractBehaviour,
  loggerThrows: fc.boolean(),
});

type SettingsInput = typeof settings extends fc.Arbitrary<infer T> ? T : never;

function build(s: SettingsInput): { settings: EnvelopeSettings; extractErrors: unknown[] } {
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
function own(object: unknown, key: string): unknown {
  if (typeof object !== 'object' || object === null) return undefined;
  return Object.prototype.hasOwnProperty.call(object, key)
    ? (object as Record<string, unknown>)[key]
    : undefined;
}

/** The headers as the model sees them: String and Number attributes with a string value. */
function expectedHeaders(attributes: unknown): Map<string, string> {
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
function idAttribute(headers: Map<string, string>, name: string): string | undefined {
  if (headers.has(name)) return headers.get(name);
  const lower = name.toLowerCase();
  for (const [key, value] of headers) if (key.toLowerCase() === lower) return value;
  return undefined;
}

/** The id the consumer must dedupe on, by the documented rules: attribute, extract, MessageId. */
function expectedId(m: Message, headers: Map<string, string>, s: SettingsInput): unknown {
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

function expectedReceiveCount(m: Message): number | undefined {
  const raw = own(m.Attributes, 'ApproximateReceiveCount');
  if (typeof raw !== 'string' || !/^[1-9][0-9]*$/.test(raw)) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : undefined;
}

describe('toEnvelope (property)', () => {
  it('never throws, and maps every message to an envelope by the documented rules', () => {
    fc.assert(
      fc.property(message, settings, (m, s) => {
        const { settings: envelopeSettings, extractErrors } = build(s);
        const envelope = toEnvelope(m, envelopeSettings);
        const headers = expectedHeaders(m.MessageAttributes);

        // Headers: exactly the String/Number attributes, values unchanged, own properties.
        expect(Object.keys(envelope.headers).sort()).toEqual([...headers.keys()].sort());
        for (const [key, value] of headers) expect(own(envelope.headers, key)).toBe(value);

        expect(envelope.id).toBe(expectedId(m, headers, s));
        // `extract` runs only when the attribute gives no id; its throw is reported once.
        const fromAttribute = idAttribute(headers, s.header);
        const extractRan = fromAttribute === undefined || fromAttribute === '';
        expect(extractErrors).toHaveLength(s.extract.kind === 'throws' && extractRan ? 1 : 0);

        const scope = headers.get(s.scopeHeader);
        if (scope !== undefined && scope !== '') expect(envelope.scope).toBe(scope);
        else expect(envelope).not.toHaveProperty('scope');

        const group = own(m.Attributes, 'MessageGroupId');
        if (typeof group === 'string') expect(envelope.key).toBe(group);
        else expect(envelope).not.toHaveProperty('key');

        const rawBody: unknown = m.Body;
        if (headers.get('body-encoding') === 'base64' && typeof rawBody === 'string') {
          expect(envelope.body).toBeInstanceOf(Uint8Array);
          expect(Buffer.from(envelope.body as Uint8Array)).toEqual(Buffer.from(rawBody, 'base64'));
        } else if (headers.get('body-encoding') === 'base64' && rawBody == null) {
          expect(envelope.body).toEqual(Buffer.alloc(0));
        } else {
          // A string body is handed over as is; a missing one as ''; anything else unchanged,
          // for the inbox to dead-letter as INVALID_BODY.
          expect(envelope.body).toBe(rawBody ?? '');
        }

        expect(envelope.delivery.source).toBe(QUEUE_URL);
        expect(envelope.delivery.receivedAt).toBeInstanceOf(Date);
        const count = expectedReceiveCount(m);
        if (count === undefined) expect(envelope.delivery).not.toHaveProperty('receiveCount');
        else expect(envelope.delivery.receiveCount).toBe(count);
      }),
      { numRuns: RUNS },
    );
  });

  it('a base64 body comes back as the exact bytes that were encoded', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => {
        const envelope = toEnvelope(
          {
            MessageId: 'm',
            Body: Buffer.from(bytes).toString('base64'),
            MessageAttributes: { 'body-encoding': { DataType: 'String', StringValue: 'base64' } },
          },
          build({
            header: 'message-id',
            scopeHeader: 'tenant',
            fallback: true,
            extract: { kind: 'none' },
            loggerThrows: false,
          }).settings,
        );
        expect(Buffer.from(envelope.body as Uint8Array).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('distinct message-id attributes never map to one id (no message is taken for another)', () => {
    fc.assert(
      fc.property(anyText, anyText, (a, b) => {
        fc.pre(a !== b && a !== '' && b !== '');
        const s = build({
          header: 'message-id',
          scopeHeader: 'tenant',
          fallback: true,
          extract: { kind: 'none' },
          loggerThrows: false,
        }).settings;
        const of = (id: string) =>
          toEnvelope(
            {
              MessageId: 'same',
              MessageAttributes: { 'message-id': { DataType: 'String', StringValue: id } },
            },
            s,
          ).id;
        expect(of(a)).toBe(a);
        expect(of(b)).toBe(b);
      }),
      { numRuns: 1_000 },
    );
  });
});

describe('fromMessageAttributes (property)', () => {
  it('never throws and returns only string values', () => {
    fc.assert(
      fc.property(messageAttributes, (attributes) => {
        const headers = fromMessageAttributes(
          attributes as Parameters<typeof fromMessageAttributes>[0],
        );
        for (const key of Object.keys(headers)) expect(typeof headers[key]).toBe('string');
        expect(new Map(Object.entries(headers))).toEqual(expectedHeaders(attributes));
      }),
      { numRuns: RUNS },
    );
  });
});

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
