import { closest, distance } from 'fastest-levenshtein';
import { ConfigurationError } from '../errors';

/**
 * Validators for options given at construction, shared by every factory in core and, through
 * `@justonce/core/transport`, by the transports, so that one kind of option is checked, and
 * reported, one way. Each takes `(value, name, fallback, ...bounds)`.
 */

/**
 * An integer option from `min` to `max`; `fallback` when absent; anything else is a
 * {@link ConfigurationError} naming the option.
 */
export function integerOption(
  value: unknown,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigurationError(`${name} must be an integer from ${min} to ${max}`, {
      [name]: value,
    });
  }
  return value;
}

/**
 * An integer option of at least 1 with no upper bound but the safe integers (sizes and
 * lengths); `fallback` when absent; anything else is a {@link ConfigurationError} naming it.
 */
export function positiveIntegerOption(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigurationError(`${name} must be a positive integer`, { [name]: value });
  }
  return value;
}

/** A duration option: a finite number of milliseconds, at least `min`; `fallback` when absent. */
export function durationOption(
  value: unknown,
  name: string,
  fallback: number,
  min: number,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new ConfigurationError(
      `${name} must be a finite number of milliseconds, at least ${min}`,
      { [name]: value },
    );
  }
  return value;
}

/** An optional function option: `undefined` when absent. */
export function optionalFunction<F>(value: unknown, name: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new ConfigurationError(`${name} must be a function`, { [name]: typeof value });
  }
  return value as F;
}

/** A boolean option; `fallback` when absent. */
export function optionalBoolean(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new ConfigurationError(`${name} must be a boolean`, { [name]: value });
  }
  return value;
}

/** The keys of `T` that the list `K` leaves out: `never` when it lists them all. @internal */
export type UnlistedKeys<T, K extends readonly PropertyKey[]> = Exclude<keyof T, K[number]>;

/** `K` itself when it lists every key of `T`; otherwise a type naming the keys left out. */
type EveryKeyOf<T, K extends readonly PropertyKey[]> = [UnlistedKeys<T, K>] extends [never]
  ? K
  : { readonly 'option keys left out of the list': UnlistedKeys<T, K> };

/**
 * The option names of the interface `T`, for {@link rejectUnknownOptions}, checked against `T`
 * at compile time both ways: an entry that is not a key of `T` is a type error, and so is a key
 * of `T` missing from the list (the error names it). Adding an option to an interface without
 * adding it here therefore fails the type check instead of being refused at run time.
 * Exported for transports from `@justonce/core/transport`.
 *
 * @example
 * ```ts
 * const RELAY_KEYS = optionKeys<RelayOptions>()(['store', 'publisher', 'batchSize', ...]);
 * ```
 */
export function optionKeys<T extends object>(): <const K extends readonly (keyof T & string)[]>(
  keys: K & EveryKeyOf<T, K>,
) => K {
  return (keys) => keys;
}

/**
 * The known key closest to `key`, compared without case (so `batchsize` finds `batchSize`),
 * or `undefined` when none is within about a third of the key's length in edits (at least one;
 * a swap of two letters is two): a suggestion further off would send the reader the wrong way.
 */
export function closestOption(key: string, known: readonly string[]): string | undefined {
  if (known.length === 0) return undefined;
  const lower = key.toLowerCase();
  const candidates = known.map((k) => k.toLowerCase());
  const best = closest(lower, candidates);
  if (distance(lower, best) > Math.max(1, Math.round(key.length / 3))) return undefined;
  return known[candidates.indexOf(best)];
}

/**
 * The message naming unknown option keys (each with `prefix`) and the closest known one:
 * "unknown option `batchsize`; did you mean `batchSize`?". @internal
 */
export function unknownOptionsMessage(
  unknown: readonly string[],
  known: readonly string[],
  prefix = '',
): { message: string; named: string[]; suggestions: (string | undefined)[] } {
  const named = unknown.map((key) => `${prefix}${key}`);
  const suggestions = unknown.map((key) => {
    const suggestion = closestOption(key, known);
    return suggestion === undefined ? undefined : `${prefix}${suggestion}`;
  });
  const hint = (i: number): string =>
    suggestions[i] === undefined ? '' : `did you mean \`${suggestions[i]}\`?`;
  const message =
    named.length === 1
      ? `unknown option \`${named[0]}\`${hint(0) === '' ? '' : `; ${hint(0)}`}`
      : `unknown options ${named.map((n, i) => `\`${n}\`${hint(i) === '' ? '' : ` (${hint(i)})`}`).join(', ')}`;
  return { message, named, suggestions };
}

/**
 * Refuses an options object with a key that is not in `known`, with a
 * {@link ConfigurationError} naming each unknown key (with its `path`, e.g. `backoff.basems`)
 * and the closest known one: "createRelay: unknown option `batchsize`; did you mean
 * `batchSize`?". A misspelt option would otherwise be ignored and its default used in silence.
 * At the top (no `path`) anything but an object is refused too (`createRelay takes an options
 * object`), so that no factory meets `undefined` with a `TypeError`; a nested value that is not
 * an object is left to the caller's own checks of that option. `details.unknown` lists the
 * unknown keys (with their path), `details.didYouMean` maps each to its suggestion.
 * Exported for transports from `@justonce/core/transport`.
 *
 * @param value - the options object as given
 * @param known - every key the options interface declares (see {@link optionKeys})
 * @param context - the factory, first in the message, e.g. `createRelay`
 * @param path - where `value` sits in the factory's options, e.g. `backoff`; empty at the top
 */
export function rejectUnknownOptions(
  value: unknown,
  known: readonly string[],
  context: string,
  path = '',
): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    if (path !== '') return;
    throw new ConfigurationError(`${context} takes an options object`, {
      given: Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value,
    });
  }
  const prefix = path === '' ? '' : `${path}.`;
  const unknown = Object.keys(value).filter((key) => !known.includes(key));
  if (unknown.length === 0) return;
  const { message, named, suggestions } = unknownOptionsMessage(unknown, known, prefix);
  // fromEntries, not assignment: a key such as `__proto__` must stay a plain entry.
  const didYouMean = Object.fromEntries(
    named.flatMap((n, i) => (suggestions[i] === undefined ? [] : [[n, suggestions[i]]])),
  );
  throw new ConfigurationError(`${context}: ${message}`, { unknown: named, didYouMean });
}
