/**
 * What the adapter suites share: the refusal check, and the JSON round trip every adapter's
 * `query` must pass (values bound as parameters, never interpolated or mangled).
 */
import { setTimeout as delay } from 'node:timers/promises';
import fc, { type JsonValue } from 'fast-check';
import { isJustonceError } from '../src/errors';
import {
  InvalidTransactionError,
  type InvalidTransactionReason,
} from '../src/transactions/invalid-transaction-error';
import type { SqlResult, SqlTransaction } from '../src/transactions/types';

/** Runs per property; `FC_RUNS` raises it. */
export const RUNS = Number(process.env.FC_RUNS ?? 30);

/** `enter` throws at once (it is synchronous: no SQL ran) an InvalidTransactionError of `reason`. */
export function expectRefused(
  enter: () => unknown,
  library: string,
  reason: InvalidTransactionReason,
): void {
  let thrown: unknown;
  try {
    enter();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(InvalidTransactionError);
  const error = thrown as InvalidTransactionError;
  expect(isJustonceError(error)).toBe(true);
  // The code is the class's own (the lead may rename it): compare with a fresh instance.
  expect({ code: error.code, reason: error.reason, retriable: error.retriable }).toEqual({
    code: new InvalidTransactionError(library, reason, '').code,
    reason,
    retriable: false,
  });
  expect(error.details).toEqual({ library, reason });
}

/**
 * Right after a statement failed, `tx.state()` is never `active`: `undefined` (the server's
 * status after the error is still on its way: node-postgres rejects on the error itself), and
 * `failed` once it has arrived.
 */
export async function expectFailedState(tx: SqlTransaction): Promise<void> {
  let state = tx.state();
  expect([undefined, 'failed']).toContain(state);
  for (let i = 0; i < 200 && state === undefined; i += 1) {
    await delay(5);
    state = tx.state();
  }
  expect(state).toBe('failed');
}

/** Values of the wrong kind for every adapter's `enter`. */
export const NOT_TRANSACTIONS: readonly [string, unknown][] = [
  ['null', null],
  ['undefined', undefined],
  ['an empty object', {}],
  ['a number', 42],
  ['a string', 'trx'],
  ['a function', () => undefined],
  ['an object without a prototype', Object.create(null) as object],
];

/**
 * Any code unit but U+0000 (PostgreSQL text refuses it), lone surrogates included, plus
 * astral characters and the characters JSON escapes or PGlite treats specially.
 */
const unit = fc.oneof(
  fc.integer({ min: 1, max: 0xffff }).map((code) => String.fromCharCode(code)),
  fc.integer({ min: 0x10000, max: 0x10ffff }).map((code) => String.fromCodePoint(code)),
  fc.constantFrom('\uD800', '\uDFFF', '\uFEFF', '"', '\\', '\u2028', '\u007F', '$1', '?'),
);
const text = fc.string({ unit, maxLength: 12 });

/** Integers beyond 2^53 and doubles at the edges, as JSON numbers. */
const number = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n }).map(Number),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 63, 1e21, 5e-324),
);

/** JSON values with nested arrays and objects. */
export const jsonValues: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    number,
    text,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(text, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** JSON text with object keys sorted at every level: `jsonb`'s own order is not the input's. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** JSON.stringify writes a lone surrogate as a `\udXXX` escape, which `jsonb` refuses. */
const LONE_SURROGATE_ESCAPE = /\\ud[89a-f][0-9a-f]{2}/i;

/**
 * `value` as JSON text, through `query` and back: as text and as `json` byte for byte, and as
 * `jsonb` (when `jsonb` can hold it: no lone surrogates) equal up to key order. `$1` is used
 * twice, so an adapter that rewrites placeholders must bind it twice.
 */
export async function expectJsonRoundTrip(
  query: (text: string, values: readonly unknown[]) => Promise<SqlResult>,
  value: JsonValue,
): Promise<void> {
  const json = JSON.stringify(value);
  const exact = await query('select $1::text as t, $1::json as j', [json]);
  expect(exact.rowCount).toBe(1);
  expect(exact.rows[0]?.t).toBe(json);
  expect(JSON.stringify(exact.rows[0]?.j)).toBe(json);
  if (!LONE_SURROGATE_ESCAPE.test(json)) {
    const binary = await query('select $1::jsonb as v', [json]);
    expect(canonical(binary.rows[0]?.v)).toBe(canonical(value));
  }
}
