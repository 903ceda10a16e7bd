import fc from 'fast-check';
import { createInbox, type Envelope } from '@justonce/core';
import type { KafkaRecord } from '../src';
import type { EnvelopeSettings } from '../src/consumer/types';
import { toEnvelope } from '../src/consumer/envelope';
import { decodeHeaders } from '../src/client/headers';
import { utf8Bytes, utf8Text } from '../src/client/text';
import { openTestStore } from '../../core/test/db';

/**
 * Property tests of the mapping from a consumed Kafka record to the inbox's envelope. The
 * input is shaped as kafkajs delivers it (header values Buffer, string, lists of them,
 * undefined; keys and values Buffer or null), with `null`s and strings where a client might
 * put them, and text that breaks naive storage: U+0000, lone surrogates, invalid UTF-8.
 * A throw in this mapping fails the record's whole chunk on every delivery, and a lossy
 * decode can make two ids one (a record skipped as another's duplicate): both must never
 * happen.
 */

const RUNS = 2_000;
const TOPIC = 'orders';
const PARTITION = 3;

/** Byte sequences that are not UTF-8: lone continuation, overlong, surrogate, cut, too high. */
const INVALID_UTF8 = [
  [0xff],
  [0x80],
  [0xc0, 0x80],
  [0xe0, 0x80, 0x80],
  [0xed, 0xa0, 0x80],
  [0xe2, 0x82],
  [0xf4, 0x90, 0x80, 0x80],
  [0xf0, 0x9f, 0x98],
].map((b) => Buffer.from(b));

/** Any UTF-16 code unit, so that lone surrogates and U+0000 turn up. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));
const anyText = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: codeUnit, maxLength: 12 }),
  fc.constantFrom('', 'a\u0000b', '\u0000', 'a\uD800b', '\uDC80', '😀', 'é'),
);

/** Bytes: arbitrary, valid text, or valid text with an invalid sequence or a 0x00 inside. */
const anyBytes: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b)),
  anyText.map((t) => Buffer.from(t, 'utf8')),
  fc
    .tuple(fc.string({ maxLength: 6 }), fc.constantFrom(...INVALID_UTF8, Buffer.of(0)))
    .map(([text, bad]) => Buffer.concat([Buffer.from(text), bad, Buffer.from(text)])),
);

const single = fc.oneof(anyBytes, anyText);
const headerValue = fc.oneof(
  { weight: 4, arbitrary: single },
  {
    weight: 2,
    arbitrary: fc.array(fc.oneof(single, fc.constant(null), fc.constant(undefined)), {
      maxLength: 3,
    }),
  },
  { weight: 1, arbitrary: fc.constantFrom(undefined, null) },
);

/** Names that the mapping looks up, that collide with `Object.prototype`, or that break storage. */
const headerName = fc.oneof(
  fc.constantFrom(
    'message-id',
    'tenant',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    '',
    'x\u0000y',
  ),
  anyText,
);

/** Headers built with own properties, so a `__proto__` header is a header. */
const headers = fc.array(fc.tuple(headerName, headerValue), { maxLength: 8 }).map((entries) => {
  const out: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    Object.defineProperty(out, name, { value, enumerable: true, configurable: true });
  }
  return out;
});

const record: fc.Arbitrary<KafkaRecord> = fc
  .record({
    key: fc.oneof(fc.constant(null), anyBytes, anyText),
    value: fc.oneof(fc.constant(null), anyBytes),
    offset: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }).map(String),
    timestamp: fc.nat().map(String),
    headers: fc.oneof(
      { weight: 8, arbitrary: headers },
      { weight: 1, arbitrary: fc.constant(undefined) },
    ),
  })
  .map((r) => r as unknown as KafkaRecord);

const extractBehaviour = fc.constantFrom('none', 'returns', 'returns-empty', 'throws');

const settingsInput = fc.record({
  header: fc.constantFrom('message-id', '__proto__', 'constructor', 'x\u0000y'),
  scopeHeader: fc.constantFrom('tenant', '__proto__', 'toString'),
  fallback: fc.boolean(),
  extract: extractBehaviour,
  reportThrows: fc.boolean(),
});
type SettingsInput = typeof settingsInput extends fc.Arbitrary<infer T> ? T : never;

function settingsOf(s: SettingsInput): EnvelopeSettings {
  const extract =
    s.extract === 'none'
      ? undefined
      : (): string | undefined => {
          if (s.extract === 'throws') throw new Error('extractor broke');
          return s.extract === 'returns' ? 'from-extract' : '';
        };
  return {
    messageId: { header: s.header, fallback: s.fallback, extract },
    scopeHeader: s.scopeHeader,
    onExtractError: () => {
      // A logger that throws must not take the record down with it.
      if (s.reportThrows) throw new Error('logger down');
    },
  };
}

/** The last present value of each header, as the model reads kafkajs headers. */
function lastValues(raw: unknown): Map<string, Buffer | string> {
  const out = new Map<string, Buffer | string>();
  if (typeof raw !== 'object' || raw === null) return out;
  for (const name of Object.keys(raw)) {
    const value: unknown = (raw as Record<string, unknown>)[name];
    const last: unknown = Array.isArray(value) ? value[value.length - 1] : value;
    if (typeof last === 'string' || Buffer.isBuffer(last)) out.set(name, last);
  }
  return out;
}

/** Whether PostgreSQL stores the text exactly (what the inbox checks before any SQL). */
function storable(text: string): boolean {
  return !text.includes('\u0000') && !/\p{Cs}/u.test(text);
}

/** Whether a value the record carried is text the inbox can key on. */
function usable(value: Buffer | string): boolean {
  return typeof value === 'string'
    ? storable(value)
    : utf8Text(value) === value.toString('utf8') && !value.includes(0);
}

function expectedId(
  r: KafkaRecord,
  values: Map<string, Buffer | string>,
  s: SettingsInput,
): string | undefined {
  const fromHeader = values.get(s.header);
  const text =
    fromHeader === undefined
      ? undefined
      : typeof fromHeader === 'string'
        ? fromHeader
        : utf8Text(fromHeader);
  if (text !== undefined && text !== '') return text;
  if (s.extract === 'returns') return 'from-extract';
  if (s.extract === 'throws') return undefined;
  return s.fallback ? `${TOPIC}/${PARTITION}/${r.offset}` : undefined;
}

describe('toEnvelope (property)', () => {
  it('never throws, and maps every kafkajs-shaped record to an envelope by the documented rules', () => {
    fc.assert(
      fc.property(record, settingsInput, fc.boolean(), (r, s, first) => {
        const envelope = toEnvelope(r, TOPIC, PARTITION, settingsOf(s), first);
        const values = lastValues(r.headers);

        // Every present header, and only those, as an own property, its bytes kept exactly.
        expect(Object.keys(envelope.headers).sort()).toEqual([...values.keys()].sort());
        for (const [name, value] of values) {
          expect(Object.hasOwn(envelope.headers, name)).toBe(true);
          const text = envelope.headers[name]!;
          expect(typeof text).toBe('string');
          if (typeof value === 'string') expect(text).toBe(value);
          else expect(utf8Bytes(text).equals(value)).toBe(true);
        }

        const id = envelope.id;
        expect(id).toBe(expectedId(r, values, s));
        // A header id the inbox cannot key on stays unusable: never swapped for the offset.
        const fromHeader = values.get(s.header);
        if (fromHeader !== undefined && fromHeader.length > 0) {
          expect(storable(id!)).toBe(usable(fromHeader));
        }

        const scope = values.get(s.scopeHeader);
        const scopeText =
          scope === undefined ? undefined : typeof scope === 'string' ? scope : utf8Text(scope);
        if (scopeText !== undefined && scopeText !== '') expect(envelope.scope).toBe(scopeText);
        else expect(envelope).not.toHaveProperty('scope');

        if (r.key === null) expect(envelope).not.toHaveProperty('key');
        else expect(envelope.key).toBe(r.key.toString());

        if (r.value === null) expect(envelope.body).toEqual(new Uint8Array(0));
        else expect(envelope.body).toBe(r.value);

        expect(envelope.delivery).toMatchObject({
          source: TOPIC,
          partition: PARTITION,
          offset: r.offset,
        });
        expect(envelope.delivery.receivedAt).toBeInstanceOf(Date);
        if (first) expect(envelope.delivery.redelivered).toBe(false);
        else expect(envelope.delivery).not.toHaveProperty('redelivered');
      }),
      { numRuns: RUNS },
    );
  });

  it('decodes header bytes one-to-one: distinct message-id bytes never become one id', () => {
    fc.assert(
      fc.property(anyBytes, anyBytes, (a, b) => {
        fc.pre(!a.equals(b));
        expect(utf8Bytes(utf8Text(a)).equals(a)).toBe(true);
        expect(utf8Text(a)).not.toBe(utf8Text(b));
        // Valid UTF-8 decodes as it always did; anything else is refused by the inbox.
        expect(storable(utf8Text(a))).toBe(a.toString('utf8') === utf8Text(a) && !a.includes(0));
      }),
      { numRuns: RUNS },
    );
  });

  it('decodeHeaders takes anything a client might hand over without throwing', () => {
    const odd = fc.oneof(
      headers,
      fc.constantFrom(
        undefined,
        null,
        7,
        'text',
        [Buffer.from('a')],
        Object.create(null) as object,
      ),
      fc.dictionary(anyText, fc.oneof(fc.integer(), fc.boolean(), fc.object(), fc.uint8Array())),
    );
    fc.assert(
      fc.property(odd, (raw) => {
        const decoded = decodeHeaders(raw as Parameters<typeof decodeHeaders>[0]);
        expect(typeof decoded).toBe('object');
      }),
      { numRuns: 500 },
    );
  });
});

describe('toEnvelope → inbox (property, on PostgreSQL)', () => {
  it('every mapped record gets an outcome, and input the store cannot hold is dead-lettered', async () => {
    const store = await openTestStore('postgres');
    try {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 4 }), async (records) => {
          // A consumer of its own per run: ids repeat across runs by design of the arbitraries.
          const inbox = createInbox({ store, consumer: `prop-${++n}` });
          const envelopes: Envelope[] = records.map((r, i) =>
            toEnvelope({ ...r, offset: String(i) }, TOPIC, PARTITION, settingsOf(PLAIN)),
          );
          const outcomes = await inbox.processBatch(envelopes, async () => 'done');
          expect(outcomes).toHaveLength(envelopes.length);
          envelopes.forEach((envelope, i) => {
            const outcome = outcomes[i]!;
            const keyable =
              typeof envelope.id === 'string' &&
              storable(envelope.id) &&
              (envelope.scope === undefined || storable(envelope.scope));
            const clean = Object.entries(envelope.headers).every(
              ([name, value]) => storable(name) && storable(value),
            );
            if (!keyable || !clean) expect(outcome.status).toBe('dead-lettered');
            else expect(['processed', 'duplicate', 'dead-lettered']).toContain(outcome.status);
          });
        }),
        { numRuns: 60 },
      );
    } finally {
      await store.dispose();
    }
  }, 40_000);
});

const PLAIN: SettingsInput = {
  header: 'message-id',
  scopeHeader: 'tenant',
  fallback: true,
  extract: 'none',
  reportThrows: false,
};
