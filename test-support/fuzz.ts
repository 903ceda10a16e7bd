/**
 * Shared pieces of the property-based suites (fast-check): text that breaks naive storage
 * and the run count. `FC_RUNS` raises the count for a long run (`pnpm test:fuzz`); the
 * default keeps each property within a few seconds in CI.
 */
import fc from 'fast-check';

/** Runs per property: `FC_RUNS` when set, else `fallback`. */
export function fcRuns(fallback: number): number {
  const fromEnv = Number(process.env.FC_RUNS);
  return Number.isSafeInteger(fromEnv) && fromEnv > 0 ? fromEnv : fallback;
}

/** Characters that PostgreSQL text, JSON or UTF-8 encoding treat specially. */
const TRICKY = [
  '\u0000',
  '\ud800',
  '\udfff',
  '\ud83d',
  '\ud83d\udca5',
  'é',
  '"',
  '\\',
  "'",
  '%',
  '\n',
  '\u2028',
  '\ufeff',
] as const;

/** Text of any kind: plain, any code point, and mixes with U+0000 and lone surrogates. */
export function anyText(maxLength = 24): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ maxLength }),
    fc.string({ unit: 'binary', maxLength }),
    fc
      .array(fc.oneof(fc.string({ maxLength: 3 }), fc.constantFrom(...TRICKY)), {
        maxLength: Math.max(1, Math.floor(maxLength / 3)),
      })
      .map((parts) => parts.join('')),
  );
}

/** True when `value` can be written as PostgreSQL text unchanged: no U+0000, no lone surrogate. */
export function writable(value: string): boolean {
  return !value.includes('\u0000') && !/\p{Cs}/u.test(value);
}

/**
 * True when `value` can serve as a key: written unchanged and read back unchanged on both
 * backends (PGlite drops a leading U+FEFF from text it returns).
 */
export function storable(value: string): boolean {
  return writable(value) && !value.startsWith('\ufeff');
}
