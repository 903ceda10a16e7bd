/**
 * Properties of the Idempotency-Key parser: any field value at all gets an answer and never
 * an exception; every Structured Field string of printable ASCII reads back as itself; keys
 * that come out are always 1 to maxKeyLength printable ASCII characters.
 */
import fc from 'fast-check';
import { serializeString } from 'structured-headers';
import { parseIdempotencyKey, type ParsedKey } from '@justonce/http';
import { anyText, fcRuns } from '../../../test-support/fuzz';

const RUNS = fcRuns(500);
const PRINTABLE = /^[\x20-\x7e]+$/;

/** Printable ASCII text of 1 to `max` characters: every value a key may have. */
const keyText = (max = 255): fc.Arbitrary<string> =>
  fc.string({
    unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
    minLength: 1,
    maxLength: max,
  });

/** Header-like strings: any text, printable ASCII, and pieces of Structured Field syntax. */
const fieldValue: fc.Arbitrary<string> = fc.oneof(
  anyText(40),
  keyText(40),
  fc
    .array(
      fc.constantFrom('"', '\\', ',', ';', '=', ' ', '\t', 'a', '1', '*', ':', '?', '(', ')', '%'),
      { maxLength: 12 },
    )
    .map((parts) => parts.join('')),
  keyText(30).map((text) => serializeString(text)),
);

function expectWellFormed(result: ParsedKey, max: number): void {
  expect(['absent', 'key', 'invalid']).toContain(result.kind);
  if (result.kind === 'key') {
    expect(result.key.length).toBeGreaterThanOrEqual(1);
    expect(result.key.length).toBeLessThanOrEqual(max);
    expect(result.key).toMatch(PRINTABLE);
  }
}

describe('parseIdempotencyKey', () => {
  it('answers any single field value without throwing', () => {
    fc.assert(
      fc.property(fieldValue, fc.integer({ min: 1, max: 300 }), (value, max) => {
        expectWellFormed(parseIdempotencyKey(value, max), max);
      }),
      { numRuns: RUNS },
    );
  });

  it('answers any list of field lines without throwing', () => {
    fc.assert(
      fc.property(fc.array(fieldValue, { maxLength: 4 }), (lines) => {
        const result = parseIdempotencyKey(lines);
        expectWellFormed(result, 255);
        if (lines.length === 0) expect(result).toEqual({ kind: 'absent' });
        if (lines.length > 1) expect(result).toEqual({ kind: 'invalid', reason: 'several-values' });
      }),
      { numRuns: RUNS },
    );
  });

  it('reads every Structured Field string back as itself, with or without whitespace and parameters', () => {
    fc.assert(
      fc.property(
        keyText(),
        fc.constantFrom('', ' ', '\t '),
        fc.constantFrom('', ';a=1', ';v=?1;x="y"'),
        (key, space, parameters) => {
          const field = `${space}${serializeString(key)}${parameters}${space}`;
          expect(parseIdempotencyKey(field)).toEqual({ kind: 'key', key, form: 'sf-string' });
          expect(parseIdempotencyKey([field])).toEqual({ kind: 'key', key, form: 'sf-string' });
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('reads every bare key back as itself', () => {
    const bare = keyText().filter(
      (key) => !key.includes(',') && !key.startsWith('"') && key.trim() === key,
    );
    fc.assert(
      fc.property(bare, (key) => {
        expect(parseIdempotencyKey(key)).toEqual({ kind: 'key', key, form: 'bare' });
      }),
      { numRuns: RUNS },
    );
  });

  it('refuses a key one character over maxKeyLength, in either form', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 300 }), (max) => {
        const key = 'k'.repeat(max + 1);
        const tooLong = { kind: 'invalid', reason: 'too-long' };
        expect(parseIdempotencyKey(serializeString(key), max)).toEqual(tooLong);
        expect(parseIdempotencyKey(key, max)).toEqual(tooLong);
        expect(parseIdempotencyKey(key.slice(1), max)).toMatchObject({ kind: 'key' });
      }),
      { numRuns: RUNS },
    );
  });

  it('refuses a list of several Structured Field strings as several values', () => {
    fc.assert(
      fc.property(fc.array(keyText(20), { minLength: 2, maxLength: 4 }), (keys) => {
        const field = keys.map((key) => serializeString(key)).join(', ');
        expect(parseIdempotencyKey(field)).toEqual({ kind: 'invalid', reason: 'several-values' });
      }),
      { numRuns: RUNS },
    );
  });

  it.each([
    [undefined, { kind: 'absent' }],
    ['', { kind: 'invalid', reason: 'empty' }],
    ['""', { kind: 'invalid', reason: 'empty' }],
    ['"abc', { kind: 'invalid', reason: 'syntax' }],
    ['"a\\x"', { kind: 'invalid', reason: 'syntax' }],
    ['"abc"def', { kind: 'invalid', reason: 'syntax' }],
    ['"é"', { kind: 'invalid', reason: 'characters' }],
    ['ab\u0000c', { kind: 'invalid', reason: 'characters' }],
    ['caf\u00e9', { kind: 'invalid', reason: 'characters' }],
    ['a, b', { kind: 'invalid', reason: 'several-values' }],
    ['"a", "b"', { kind: 'invalid', reason: 'several-values' }],
    ['"a\\"b"', { kind: 'key', key: 'a"b', form: 'sf-string' }],
    [
      '  8e03978e-40d5-43e8-bc93-6894a57f9324 ',
      { kind: 'key', key: '8e03978e-40d5-43e8-bc93-6894a57f9324', form: 'bare' },
    ],
  ] as const)('%j → %j', (field, expected) => {
    expect(parseIdempotencyKey(field)).toEqual(expected);
  });
});
